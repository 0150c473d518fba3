import math

import nki
import nki.isa as nisa
import nki.language as nl


def transposed(dst, src, rows, cols):
    """dst [cols, rows] (SBUF) = src [rows, cols] (SBUF) transposed on TensorE."""
    t_psum = nl.ndarray((cols, rows), dtype=src.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=t_psum, data=src)
    nisa.tensor_copy(dst=dst, src=t_psum)


@nki.jit
def solution(q, k_active, v_active, k_prior, v_prior, attention_mask):
    # grouped-query token generation: per key/value head, its group of query heads as the rows
    # of every tile; masked cached keys get -30000 added (exp of them is 0)
    _, heads, _, d = q.shape
    _, kv_heads, seq, _ = k_prior.shape
    group = heads // kv_heads
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((1, heads, 1, d), dtype=q.dtype, buffer=nl.shared_hbm)
    q_rows = q.reshape((heads, d))
    ka_col = k_active.reshape((kv_heads * d, 1))
    va_rows = v_active.reshape((kv_heads, d))

    # the mask on every row of a group, as 0 (kept) or -30000 (masked)
    mask_u8 = nl.ndarray((group, seq), dtype=attention_mask.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mask_u8, src=attention_mask.reshape((1, seq)).broadcast(0, group))
    mask_f = nl.ndarray((group, seq), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=mask_f, src=mask_u8)
    penalty = nl.ndarray((group, seq), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(
        dst=penalty, data=mask_f, op0=nl.subtract, operand0=1.0, op1=nl.multiply, operand1=30000.0
    )

    for g in nl.affine_range(kv_heads):
        # the group's queries transposed to [d, group]; this head's cached keys to [d, seq]
        q_g = nl.ndarray((group, d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=q_g, src=q_rows[g * group : (g + 1) * group, 0:d])
        q_t = nl.ndarray((d, group), dtype=q.dtype, buffer=nl.sbuf)
        transposed(q_t, q_g, group, d)
        k_t = nl.ndarray((d, seq), dtype=k_prior.dtype, buffer=nl.sbuf)
        for c in nl.affine_range(seq // 128):
            k_tile = nl.ndarray((128, d), dtype=k_prior.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=k_tile, src=k_prior[0, g, c * 128 : (c + 1) * 128, 0:d])
            transposed(k_t[0:d, c * 128 : (c + 1) * 128], k_tile, 128, d)
        ka = nl.ndarray((d, 1), dtype=k_active.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ka, src=ka_col[g * d : (g + 1) * d, 0:1])

        # scaled scores: cached (masked) and active
        s_psum = nl.ndarray((group, seq), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=s_psum, stationary=q_t, moving=k_t)
        scores = nl.ndarray((group, seq), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=scores, data=s_psum, op0=nl.multiply, operand0=scale)
        nisa.tensor_tensor(dst=scores, data1=scores, data2=penalty, op=nl.add)
        a_psum = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=a_psum, stationary=q_t, moving=ka)
        active = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=active, data=a_psum, op0=nl.multiply, operand0=scale)

        # softmax over both: shared max, exponentials and their sum
        row_max = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=scores, axis=1)
        nisa.tensor_tensor(dst=row_max, data1=row_max, data2=active, op=nl.maximum)
        neg_max = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=neg_max, data=row_max, op0=nl.multiply, operand0=-1.0)
        e_prior = nl.ndarray((group, seq), dtype=q.dtype, buffer=nl.sbuf)
        prior_sum = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=e_prior,
            op=nl.exp,
            data=scores,
            bias=neg_max,
            reduce_op=nl.add,
            reduce_res=prior_sum,
        )
        e_active = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e_active, op=nl.exp, data=active, bias=neg_max)
        denom = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=denom, data1=prior_sum, data2=e_active, op=nl.add)
        inv = nl.ndarray((group, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=denom)

        # e_prior @ v_prior (the exponentials transposed 128 keys at a time) + e_active * v_active
        o_psum = nl.ndarray((group, d), dtype=nl.float32, buffer=nl.psum)
        for c in nl.affine_range(seq // 128):
            e_t = nl.ndarray((128, group), dtype=q.dtype, buffer=nl.sbuf)
            transposed(e_t, e_prior[0:group, c * 128 : (c + 1) * 128], group, 128)
            v_tile = nl.ndarray((128, d), dtype=v_prior.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_tile, src=v_prior[0, g, c * 128 : (c + 1) * 128, 0:d])
            nisa.nc_matmul(dst=o_psum, stationary=e_t, moving=v_tile)
        va = nl.ndarray((group, d), dtype=v_active.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=va, src=va_rows[g : g + 1, 0:d].broadcast(0, group))
        o = nl.ndarray((group, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=va, op0=nl.multiply, operand0=e_active)
        nisa.tensor_tensor(dst=o, data1=o, data2=o_psum, op=nl.add)
        o_out = nl.ndarray((group, d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o_out, data=o, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out.reshape((heads, d))[g * group : (g + 1) * group, 0:d], src=o_out)
    return out
