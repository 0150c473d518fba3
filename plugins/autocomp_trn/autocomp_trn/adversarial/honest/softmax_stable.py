# Honest: row softmax with the row max subtracted before exp (exact on any finite input).
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])
        neg_max = nisa.tensor_reduce(np.max, tile, axis=(1,), negate=True)
        row_sum = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32)
        e = nisa.activation(op=nl.exp, data=tile, bias=neg_max, reduce_op=np.add, reduce_res=row_sum)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(e, nl.reciprocal(row_sum)))
    return out
