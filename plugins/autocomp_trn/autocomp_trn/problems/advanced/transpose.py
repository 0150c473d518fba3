import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(x):
    # out[b, j, i] = x[b, i, j]: 128x128 tiles through TensorE transposes
    B, R, C = x.shape
    out = nl.ndarray((B, C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        for i in nl.affine_range(R // 128):
            for j in nl.affine_range(C // 128):
                tile = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=tile, src=x[b, i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
                t_psum = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=t_psum, data=tile)
                t_sbuf = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=t_sbuf, src=t_psum)
                nisa.dma_copy(dst=out[b, j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], src=t_sbuf)
    return out
