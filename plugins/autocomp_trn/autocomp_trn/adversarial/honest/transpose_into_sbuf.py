# Honest: a TensorE transpose (PSUM result) assigned to an SBUF tile; NKI copies PSUM -> SBUF on
# the assignment (the original system's attention and sd_attention programs do this).
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(x):
    B, R, C = x.shape
    out = nl.ndarray((B, C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        for i in nl.affine_range(R // 128):
            for j in nl.affine_range(C // 128):
                tile = nl.load(x[b, i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
                t_sbuf = nl.ndarray((nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
                t_sbuf[...] = nisa.nc_transpose(tile)
                nl.store(out[b, j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], value=t_sbuf)
    return out
