# Broken (current API): a tile of 256 partitions (a verification error since NKI 0.6).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(a_tensor, g_tensor):
    rows, cols = a_tensor.shape
    out = nl.ndarray((rows, cols), dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 256):
        a = nl.ndarray((256, cols), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=a_tensor[i * 256:(i + 1) * 256, 0:cols])
        sq = nl.ndarray((256, cols), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sq, data1=a, data2=a, op=nl.multiply)
        nisa.dma_copy(dst=out[i * 256:(i + 1) * 256, 0:cols], src=sq)
    return out
