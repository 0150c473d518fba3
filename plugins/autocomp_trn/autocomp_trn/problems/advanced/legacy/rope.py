import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(x, cos, sin):
    # rotary embedding: out_lo = x_lo*cos - x_hi*sin, out_hi = x_hi*cos + x_lo*sin
    d_head, seq = x.shape
    half = d_head // 2
    out = nl.ndarray((d_head, seq), dtype=x.dtype, buffer=nl.shared_hbm)
    tile_s = 512
    for j in nl.affine_range(seq // tile_s):
        cols = slice(j * tile_s, (j + 1) * tile_s)
        x_lo = nl.load(x[0:half, cols])
        x_hi = nl.load(x[half:d_head, cols])
        c = nl.load(cos[:, cols])
        s = nl.load(sin[:, cols])
        lo_cos = nisa.tensor_tensor(x_lo, c, op=nl.multiply)
        hi_sin = nisa.tensor_tensor(x_hi, s, op=nl.multiply)
        out_lo = nisa.tensor_tensor(lo_cos, hi_sin, op=nl.subtract)
        hi_cos = nisa.tensor_tensor(x_hi, c, op=nl.multiply)
        lo_sin = nisa.tensor_tensor(x_lo, s, op=nl.multiply)
        out_hi = nisa.tensor_tensor(hi_cos, lo_sin, op=nl.add)
        nl.store(out[0:half, cols], value=out_lo)
        nl.store(out[half:d_head, cols], value=out_hi)
    return out
