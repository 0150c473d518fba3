import math

import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(q, k, v, olm_prev, q_tile_idx=64):
    # one flash-attention step: the q tile against all keys (masked afterwards), merged into olm_prev
    d, seq = q.shape
    olm = nl.ndarray((128, d + 2), dtype=nl.float32, buffer=nl.shared_hbm)
    scale = 1.0 / math.sqrt(d)
    q_tile = nl.load(q[:, q_tile_idx * 128:(q_tile_idx + 1) * 128], dtype=nl.bfloat16)
    prev = nl.load(olm_prev)

    s = nl.ndarray((nl.par_dim(128), seq), dtype=nl.float32)
    for j in nl.affine_range(seq // 512):
        k_tile = nl.load(k[:, j * 512:(j + 1) * 512], dtype=nl.bfloat16)
        s_psum = nisa.nc_matmul(q_tile, k_tile)
        s[:, j * 512:(j + 1) * 512] = nl.multiply(s_psum, scale)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(seq)[None, :]
    s_masked = nisa.affine_select(q_tile_idx * 128 + i_p - i_f >= 0, s, -9984.0)

    m_prev = prev[:, d + 1:d + 2]
    m_new = nl.maximum(nl.max(s_masked, axis=[1]), m_prev)
    row_sum = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32)
    p = nisa.activation(op=nl.exp, data=s_masked, bias=nl.negative(m_new), reduce_op=np.add,
                        reduce_res=row_sum, dtype=nl.bfloat16)
    alpha = nl.exp(nl.subtract(m_prev, m_new))

    o_psum = nl.zeros((128, d), nl.float32, buffer=nl.psum)
    for j in nl.affine_range(seq // 128):
        p_t = nisa.nc_transpose(p[:, j * 128:(j + 1) * 128])
        p_t_sb = nl.copy(p_t, dtype=nl.bfloat16)
        v_tile = nl.load(v[j, :, :], dtype=nl.bfloat16)
        o_psum += nisa.nc_matmul(p_t_sb, v_tile)

    result = nl.ndarray((nl.par_dim(128), d + 2), dtype=nl.float32)
    result[:, 0:d] = nl.add(nl.multiply(prev[:, 0:d], alpha), o_psum)
    result[:, d:d + 1] = nl.add(nl.multiply(prev[:, d:d + 1], alpha), row_sum)
    result[:, d + 1:d + 2] = nl.copy(m_new)
    nl.store(olm, value=result)
    return olm
