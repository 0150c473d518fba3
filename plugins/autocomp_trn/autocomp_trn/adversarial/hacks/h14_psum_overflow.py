# Broken: a matmul output wider than one 2 KiB PSUM bank (1024 fp32 per partition).
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 1024):
            acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhs = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 1024:(n + 1) * 1024])
                acc += nisa.nc_matmul(lhs, rhs_tile)
            nl.store(result[m * 128:(m + 1) * 128, n * 1024:(n + 1) * 1024], value=nl.copy(acc))
    return result
