import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(x):
    # out[b, j, i] = x[b, i, j]: 128x128 tiles through TensorE transposes
    B, R, C = x.shape
    out = nl.ndarray((B, C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        for i in nl.affine_range(R // 128):
            for j in nl.affine_range(C // 128):
                tile = nl.load(x[b, i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
                t_psum = nisa.nc_transpose(tile)
                t_sbuf = nl.copy(t_psum, dtype=x.dtype)
                nl.store(out[b, j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], value=t_sbuf)
    return out
