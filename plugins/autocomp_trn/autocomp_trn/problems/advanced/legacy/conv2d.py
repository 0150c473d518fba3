import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(img, filt):
    # 3x3 convolution, padding 1: per output row, 9 matmuls (one per filter tap) accumulated in PSUM
    N, C, H, W = img.shape
    CO = filt.shape[0]
    out = nl.ndarray((N, CO, H, W), dtype=img.dtype, buffer=nl.shared_hbm)
    for co in nl.affine_range(CO // 128):
        # filter taps transposed to [C_in, C_out] on TensorE
        w_t = nl.ndarray((3, 3, nl.par_dim(C), 128), dtype=filt.dtype)
        for kh in nl.affine_range(3):
            for kw in nl.affine_range(3):
                w_tile = nl.load(filt[co * 128:(co + 1) * 128, 0:C, kh, kw])
                w_psum = nisa.nc_transpose(w_tile)
                w_t[kh, kw, :, :] = nl.copy(w_psum, dtype=filt.dtype)
        for n in nl.affine_range(N):
            padded = nl.zeros((nl.par_dim(C), H + 2, W + 2), dtype=img.dtype)
            padded[:, 1:H + 1, 1:W + 1] = nl.load(img[n, :, :, :])
            for h in nl.affine_range(H):
                acc = nl.zeros((128, W), nl.float32, buffer=nl.psum)
                for kh in nl.affine_range(3):
                    for kw in nl.affine_range(3):
                        acc += nisa.nc_matmul(w_t[kh, kw, :, :], padded[:, h + kh, kw:kw + W])
                row = nl.copy(acc, dtype=img.dtype)
                nl.store(out[n, co * 128:(co + 1) * 128, h, :], value=row)
    return out
