import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(img, filt, padding):
    # Depthwise conv1d as three shifted whole-row multiply-adds per (image, 128-channel tile): the
    # filter taps are [P, 1] operands, the multiplies alternate between VectorE and ScalarE. Written
    # for the problem's padding of one zero on each side.
    assert tuple(padding[1]) == (1, 1)
    N, C, _, W = img.shape
    out = nl.ndarray((N, C, 1, W), dtype=img.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range(C // 128):
        taps = nl.load(filt[c * 128 : (c + 1) * 128, 0, 0, :])
        for n in nl.affine_range(N):
            row = nl.ndarray((nl.par_dim(128), W + 2), dtype=img.dtype)
            row[:, 0:1] = 0.0
            row[:, W + 1 : W + 2] = 0.0
            row[:, 1 : W + 1] = nl.load(img[n, c * 128 : (c + 1) * 128, 0, :])
            acc = nisa.tensor_scalar(row[:, 0:W], np.multiply, taps[:, 0:1])
            mid = nisa.activation(op=nl.copy, data=row[:, 1 : W + 1], scale=taps[:, 1:2])
            right = nisa.activation(op=nl.copy, data=row[:, 2 : W + 2], scale=taps[:, 2:3])
            acc2 = nisa.tensor_tensor(acc, mid, op=np.add)
            result = nisa.tensor_tensor(acc2, right, op=np.add)
            nl.store(out[n, c * 128 : (c + 1) * 128, 0, :], value=result)
    return out
