import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(x, cos, sin):
    # rotary embedding: out_lo = x_lo*cos - x_hi*sin, out_hi = x_hi*cos + x_lo*sin
    d_head, seq = x.shape
    half = d_head // 2
    out = nl.ndarray((d_head, seq), dtype=x.dtype, buffer=nl.shared_hbm)
    tile_s = 512
    for j in nl.affine_range(seq // tile_s):
        c0 = j * tile_s
        x_lo = nl.ndarray((half, tile_s), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_lo, src=x[0:half, c0:c0 + tile_s])
        x_hi = nl.ndarray((half, tile_s), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_hi, src=x[half:d_head, c0:c0 + tile_s])
        c = nl.ndarray((half, tile_s), dtype=cos.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=c, src=cos[0:half, c0:c0 + tile_s])
        s = nl.ndarray((half, tile_s), dtype=sin.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=sin[0:half, c0:c0 + tile_s])
        lo_cos = nl.ndarray((half, tile_s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=lo_cos, data1=x_lo, data2=c, op=nl.multiply)
        hi_sin = nl.ndarray((half, tile_s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=hi_sin, data1=x_hi, data2=s, op=nl.multiply)
        out_lo = nl.ndarray((half, tile_s), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out_lo, data1=lo_cos, data2=hi_sin, op=nl.subtract)
        hi_cos = nl.ndarray((half, tile_s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=hi_cos, data1=x_hi, data2=c, op=nl.multiply)
        lo_sin = nl.ndarray((half, tile_s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=lo_sin, data1=x_lo, data2=s, op=nl.multiply)
        out_hi = nl.ndarray((half, tile_s), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out_hi, data1=hi_cos, data2=lo_sin, op=nl.add)
        nisa.dma_copy(dst=out[0:half, c0:c0 + tile_s], src=out_lo)
        nisa.dma_copy(dst=out[half:d_head, c0:c0 + tile_s], src=out_hi)
    return out
