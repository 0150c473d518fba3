import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(img, filt, padding):
    # depthwise conv1d, filter width 3, zero padding ((0, 0), (1, 1)): one [128, 3] window product
    # and reduction per output position
    N, C, _, W = img.shape
    K = filt.shape[3]
    left, right = padding[1]
    out = nl.ndarray((N, C, 1, W), dtype=img.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range(C // 128):
        for n in nl.affine_range(N):
            padded = nl.ndarray((128, left + W + right), dtype=img.dtype, buffer=nl.sbuf)
            nisa.memset(dst=padded, value=0.0)
            nisa.dma_copy(dst=padded[0:128, left:left + W], src=img[n, c * 128:(c + 1) * 128, 0, 0:W])
            f = nl.ndarray((128, K), dtype=filt.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=f, src=filt[c * 128:(c + 1) * 128, 0, 0, 0:K])
            result = nl.ndarray((128, W), dtype=img.dtype, buffer=nl.sbuf)
            for w in nl.affine_range(W):
                prod = nl.ndarray((128, K), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=prod, data1=padded[0:128, w:w + K], data2=f, op=nl.multiply)
                nisa.tensor_reduce(dst=result[0:128, w:w + 1], op=nl.add, data=prod, axis=1)
            nisa.dma_copy(dst=out[n, c * 128:(c + 1) * 128, 0, 0:W], src=result)
    return out
