import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(img, filt):
    # 3x3 convolution, padding 1: per output row, 9 matmuls (one per filter tap) accumulated in PSUM
    N, C, H, W = img.shape
    CO = filt.shape[0]
    out = nl.ndarray((N, CO, H, W), dtype=img.dtype, buffer=nl.shared_hbm)
    for co in nl.affine_range(CO // 128):
        # filter taps transposed to [C_in, C_out] on TensorE
        w_t = nl.ndarray((C, 3, 3, 128), dtype=filt.dtype, buffer=nl.sbuf)
        for kh in nl.affine_range(3):
            for kw in nl.affine_range(3):
                w_tile = nl.ndarray((128, C), dtype=filt.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_tile, src=filt[co * 128:(co + 1) * 128, 0:C, kh, kw])
                w_psum = nl.ndarray((C, 128), dtype=filt.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=w_psum, data=w_tile)
                nisa.tensor_copy(dst=w_t[0:C, kh, kw, 0:128], src=w_psum)
        for n in nl.affine_range(N):
            padded = nl.ndarray((C, H + 2, W + 2), dtype=img.dtype, buffer=nl.sbuf)
            nisa.memset(dst=padded, value=0.0)
            nisa.dma_copy(dst=padded[0:C, 1:H + 1, 1:W + 1], src=img[n, 0:C, 0:H, 0:W])
            for h in nl.affine_range(H):
                acc = nl.ndarray((128, W), dtype=nl.float32, buffer=nl.psum)
                for kh in nl.affine_range(3):
                    for kw in nl.affine_range(3):
                        nisa.nc_matmul(dst=acc, stationary=w_t[0:C, kh, kw, 0:128],
                                       moving=padded[0:C, h + kh, kw:kw + W])
                row = nl.ndarray((128, W), dtype=img.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=row, src=acc)
                nisa.dma_copy(dst=out[n, co * 128:(co + 1) * 128, h, 0:W], src=row)
    return out
