import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(q, k, v):
    # causal attention for each head: every query tile against every key (masked afterwards)
    heads, seq, d = q.shape
    o = nl.ndarray((heads, seq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    lse = nl.ndarray((heads, seq, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    row_max_out = nl.ndarray((heads, seq, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    kernel_dtype = nl.bfloat16
    scale = 1.0 / math.sqrt(d)

    for h in nl.affine_range(heads):
        # this head's k [d, seq] and v as [128 keys, tile, d], both cast to bf16 for TensorE
        k_f32 = nl.ndarray((d, seq), dtype=k.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_f32, src=k[h, 0:d, 0:seq])
        k_sb = nl.ndarray((d, seq), dtype=kernel_dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=k_sb, src=k_f32)
        v_sb = nl.ndarray((128, seq // 128, d), dtype=kernel_dtype, buffer=nl.sbuf)
        for j in nl.affine_range(seq // 128):
            v_f32 = nl.ndarray((128, d), dtype=v.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_f32, src=v[h, j * 128:(j + 1) * 128, 0:d])
            nisa.tensor_copy(dst=v_sb[0:128, j, 0:d], src=v_f32)

        for i in nl.affine_range(seq // 128):
            q_f32 = nl.ndarray((128, d), dtype=q.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=q_f32, src=q[h, i * 128:(i + 1) * 128, 0:d])
            q_t_psum = nl.ndarray((d, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=q_t_psum, data=q_f32)
            q_t = nl.ndarray((d, 128), dtype=kernel_dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=q_t, src=q_t_psum)
            s = nl.ndarray((128, seq), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.affine_range(seq // 512):
                s_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=s_psum, stationary=q_t, moving=k_sb[0:d, j * 512:(j + 1) * 512])
                nisa.tensor_scalar(dst=s[0:128, j * 512:(j + 1) * 512], data=s_psum, op0=nl.multiply,
                                   operand0=scale)
            # keep key <= query: i * 128 + partition - key >= 0
            s_masked = nl.ndarray((128, seq), dtype=nl.float32, buffer=nl.sbuf)
            nisa.affine_select(dst=s_masked, pattern=[[-1, seq]], offset=i * 128, channel_multiplier=1,
                               on_true_tile=s, on_false_value=-9984.0, cmp_op=nl.greater_equal)
            mx = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=mx, op=nl.maximum, data=s_masked, axis=1)
            neg_mx = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_mx, data=mx, op0=nl.multiply, operand0=-1.0)
            row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            p = nl.ndarray((128, seq), dtype=kernel_dtype, buffer=nl.sbuf)
            nisa.activation(dst=p, op=nl.exp, data=s_masked, bias=neg_mx, reduce_op=nl.add, reduce_res=row_sum)
            o_psum = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            for j in nl.affine_range(seq // 128):
                p_t_psum = nl.ndarray((128, 128), dtype=kernel_dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=p_t_psum, data=p[0:128, j * 128:(j + 1) * 128])
                p_t = nl.ndarray((128, 128), dtype=kernel_dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=p_t, src=p_t_psum)
                nisa.nc_matmul(dst=o_psum, stationary=p_t, moving=v_sb[0:128, j, 0:d])
            inv_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv_sum, data=row_sum)
            o_tile = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=o_tile, data=o_psum, op0=nl.multiply, operand0=inv_sum)
            nisa.dma_copy(dst=o[h, i * 128:(i + 1) * 128, 0:d], src=o_tile)
            log_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=log_sum, op=nl.log, data=row_sum)
            lse_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=lse_tile, data1=mx, data2=log_sum, op=nl.add)
            nisa.dma_copy(dst=lse[h, i * 128:(i + 1) * 128, 0:1], src=lse_tile)
            nisa.dma_copy(dst=row_max_out[h, i * 128:(i + 1) * 128, 0:1], src=mx)
    return o, lse, row_max_out
