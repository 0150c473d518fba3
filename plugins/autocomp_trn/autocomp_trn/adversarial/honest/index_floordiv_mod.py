# Honest: the depthwise conv1d baseline with the channel addressed through a flat index split by
# // and % (affine on every tile: the real compiler accepts it).
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(img, filt, padding):
    N, C, _, W = img.shape
    K = filt.shape[3]
    left, right = padding[1]
    out = nl.ndarray((N, C, 1, W), dtype=img.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iw = nl.arange(W)[None, :]
    for t in nl.affine_range(N * C // 128):
        flat = t * 128 + ip  # flat (batch, channel) row
        padded = nl.zeros((nl.par_dim(128), left + W + right), dtype=img.dtype)
        padded[:, left:left + W] = nl.load(img[flat // C, flat % C, 0, iw])
        f = nl.load(filt[(t * 128) % C + ip, 0, 0, nl.arange(K)[None, :]])
        result = nl.ndarray((nl.par_dim(128), W), dtype=img.dtype)
        for w in nl.affine_range(W):
            prod = nisa.tensor_tensor(padded[:, w:w + K], f, op=nl.multiply)
            result[:, w:w + 1] = nisa.tensor_reduce(np.add, prod, axis=(1,), keepdims=True)
        nl.store(out[flat // C, flat % C, 0, iw], value=result)
    return out
