# Broken: a running prefix sum carried between nl.affine_range iterations (only += accumulation
# may cross affine iterations; this needs nl.sequential_range).
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def solution(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    w = 512
    for i in nl.affine_range(rows // 128):
        carry = nl.zeros((nl.par_dim(128), 1), dtype=nl.float32)
        for j in nl.affine_range(cols // w):
            tile = nl.load(x[i * 128:(i + 1) * 128, j * w:(j + 1) * w])
            ones = nl.ones((nl.par_dim(128), w), dtype=nl.float32)
            scanned = nisa.tensor_tensor_scan(ones, tile, initial=carry, op0=np.multiply, op1=np.add)
            carry[...] = nl.copy(scanned[:, w - 1:w])
            nl.store(out[i * 128:(i + 1) * 128, j * w:(j + 1) * w], value=scanned)
    return out
