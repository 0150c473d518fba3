import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(q, k, v, olm_prev, q_tile_idx=64):
    # one flash-attention step: the q tile against all keys (masked afterwards), merged into olm_prev
    d, seq = q.shape
    olm = nl.ndarray((128, d + 2), dtype=nl.float32, buffer=nl.shared_hbm)
    kernel_dtype = nl.bfloat16
    scale = 1.0 / math.sqrt(d)
    q_f32 = nl.ndarray((d, 128), dtype=q.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_f32, src=q[0:d, q_tile_idx * 128:(q_tile_idx + 1) * 128])
    q_tile = nl.ndarray((d, 128), dtype=kernel_dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=q_tile, src=q_f32)
    prev = nl.ndarray((128, d + 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=prev, src=olm_prev)

    # scaled scores against every key, 512 at a time
    s = nl.ndarray((128, seq), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(seq // 512):
        k_f32 = nl.ndarray((d, 512), dtype=k.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_f32, src=k[0:d, j * 512:(j + 1) * 512])
        k_tile = nl.ndarray((d, 512), dtype=kernel_dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=k_tile, src=k_f32)
        s_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=s_psum, stationary=q_tile, moving=k_tile)
        nisa.tensor_scalar(dst=s[0:128, j * 512:(j + 1) * 512], data=s_psum, op0=nl.multiply, operand0=scale)
    # keep key <= query: q_tile_idx * 128 + partition - key >= 0
    s_masked = nl.ndarray((128, seq), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(dst=s_masked, pattern=[[-1, seq]], offset=q_tile_idx * 128, channel_multiplier=1,
                       on_true_tile=s, on_false_value=-9984.0, cmp_op=nl.greater_equal)

    # the new running max, the rescaling of the old state, the new probabilities and their sum
    m_prev = prev[0:128, d + 1:d + 2]
    row_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=s_masked, axis=1)
    m_new = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=m_new, data1=row_max, data2=m_prev, op=nl.maximum)
    neg_m_new = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=neg_m_new, data=m_new, op0=nl.multiply, operand0=-1.0)
    row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    p = nl.ndarray((128, seq), dtype=kernel_dtype, buffer=nl.sbuf)
    nisa.activation(dst=p, op=nl.exp, data=s_masked, bias=neg_m_new, reduce_op=nl.add, reduce_res=row_sum)
    alpha = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=alpha, op=nl.exp, data=m_prev, bias=neg_m_new)

    # p @ v, p transposed block by block on TensorE
    o_psum = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(seq // 128):
        p_t_psum = nl.ndarray((128, 128), dtype=kernel_dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=p_t_psum, data=p[0:128, j * 128:(j + 1) * 128])
        p_t = nl.ndarray((128, 128), dtype=kernel_dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=p_t, src=p_t_psum)
        v_f32 = nl.ndarray((128, d), dtype=v.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=v_f32, src=v[j, 0:128, 0:d])
        v_tile = nl.ndarray((128, d), dtype=kernel_dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=v_tile, src=v_f32)
        nisa.nc_matmul(dst=o_psum, stationary=p_t, moving=v_tile)

    # o' = o * alpha + p @ v, l' = l * alpha + sum, m' = m_new
    result = nl.ndarray((128, d + 2), dtype=nl.float32, buffer=nl.sbuf)
    o_scaled = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o_scaled, data=prev[0:128, 0:d], op0=nl.multiply, operand0=alpha)
    nisa.tensor_tensor(dst=result[0:128, 0:d], data1=o_scaled, data2=o_psum, op=nl.add)
    l_scaled = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=l_scaled, data1=prev[0:128, d:d + 1], data2=alpha, op=nl.multiply)
    nisa.tensor_tensor(dst=result[0:128, d:d + 1], data1=l_scaled, data2=row_sum, op=nl.add)
    nisa.tensor_copy(dst=result[0:128, d + 1:d + 2], src=m_new)
    nisa.dma_copy(dst=olm, src=result)
    return olm
