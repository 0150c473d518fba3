import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(lhsT, rhs):
    # Blocked GEMM: a block of 4 M tiles of lhsT stays in SBUF for the whole kernel step, each rhs
    # tile is loaded once per block and feeds 4 matmuls accumulating in 4 PSUM banks.
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN, BM = 128, 128, 512, 4
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (TM * BM)):
        m0 = mb * TM * BM
        lhs_blk = nl.ndarray((KT, nl.par_dim(TK), TM * BM), dtype=lhsT.dtype)
        for k in nl.affine_range(KT):
            lhs_blk[k] = nl.load(lhsT[k * TK : (k + 1) * TK, m0 : m0 + TM * BM])
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((BM, nl.par_dim(TM), TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                rhs_tile = nl.load(rhs[k * TK : (k + 1) * TK, n * TN : (n + 1) * TN])
                for mi in nl.affine_range(BM):
                    acc[mi] += nisa.nc_matmul(lhs_blk[k, :, mi * TM : (mi + 1) * TM], rhs_tile)
            for mi in nl.affine_range(BM):
                engine = nisa.scalar_engine if mi % 2 else nisa.vector_engine
                out_tile = nisa.tensor_copy(acc[mi], dtype=result.dtype, engine=engine)
                nl.store(
                    result[m0 + mi * TM : m0 + (mi + 1) * TM, n * TN : (n + 1) * TN], value=out_tile
                )
    return result
