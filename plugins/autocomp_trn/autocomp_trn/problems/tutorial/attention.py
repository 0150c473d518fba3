import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(q_ref, k_ref, v_ref):
    # softmax(q.T @ k) @ v.T, unfused: every stage is its own pass, intermediates go through HBM in fp32
    d_head, seq_q = q_ref.shape
    seq_k = k_ref.shape[1]
    out_ref = nl.ndarray((seq_q, d_head), dtype=q_ref.dtype, buffer=nl.shared_hbm)
    scores = nl.ndarray((seq_q, seq_k), dtype=nl.float32, buffer=nl.hbm)
    probs = nl.ndarray((seq_q, seq_k), dtype=nl.float32, buffer=nl.hbm)
    probs_t = nl.ndarray((seq_k, seq_q), dtype=nl.float32, buffer=nl.hbm)
    row_max = nl.ndarray((seq_q, 1), dtype=nl.float32, buffer=nl.hbm)
    row_sum = nl.ndarray((seq_q, 1), dtype=nl.float32, buffer=nl.hbm)

    # 1. scores = q.T @ k, one [128, 512] PSUM tile at a time
    for i in nl.affine_range(seq_q // 128):
        for j in nl.affine_range(seq_k // 512):
            q_tile = nl.ndarray((d_head, 128), dtype=q_ref.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=q_tile, src=q_ref[0:d_head, i * 128:(i + 1) * 128])
            k_tile = nl.ndarray((d_head, 512), dtype=k_ref.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=k_tile, src=k_ref[0:d_head, j * 512:(j + 1) * 512])
            s_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_psum, stationary=q_tile, moving=k_tile)
            s_sbuf = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=s_sbuf, src=s_psum)
            nisa.dma_copy(dst=scores[i * 128:(i + 1) * 128, j * 512:(j + 1) * 512], src=s_sbuf)

    # 2. row maxima
    for i in nl.affine_range(seq_q // 128):
        s_tile = nl.ndarray((128, seq_k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s_tile, src=scores[i * 128:(i + 1) * 128, 0:seq_k])
        m_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=m_tile, op=nl.maximum, data=s_tile, axis=1)
        nisa.dma_copy(dst=row_max[i * 128:(i + 1) * 128, 0:1], src=m_tile)

    # 3. exp(scores - row max)
    for i in nl.affine_range(seq_q // 128):
        s_tile = nl.ndarray((128, seq_k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s_tile, src=scores[i * 128:(i + 1) * 128, 0:seq_k])
        m_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=m_tile, src=row_max[i * 128:(i + 1) * 128, 0:1])
        shifted = nl.ndarray((128, seq_k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=shifted, data=s_tile, op0=nl.subtract, operand0=m_tile)
        e_tile = nl.ndarray((128, seq_k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e_tile, op=nl.exp, data=shifted)
        nisa.dma_copy(dst=probs[i * 128:(i + 1) * 128, 0:seq_k], src=e_tile)

    # 4. row sums
    for i in nl.affine_range(seq_q // 128):
        e_tile = nl.ndarray((128, seq_k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=e_tile, src=probs[i * 128:(i + 1) * 128, 0:seq_k])
        sum_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=sum_tile, op=nl.add, data=e_tile, axis=1)
        nisa.dma_copy(dst=row_sum[i * 128:(i + 1) * 128, 0:1], src=sum_tile)

    # 5. transpose the probabilities block by block on TensorE
    for i in nl.affine_range(seq_q // 128):
        for j in nl.affine_range(seq_k // 128):
            p_tile = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=p_tile, src=probs[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
            p_t_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=p_t_psum, data=p_tile)
            p_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=p_t, src=p_t_psum)
            nisa.dma_copy(dst=probs_t[j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], src=p_t)

    # 6. out = probs @ v.T, normalized by the row sums
    for i in nl.affine_range(seq_q // 128):
        out_psum = nl.ndarray((128, d_head), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(seq_k // 128):
            p_t_f32 = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=p_t_f32, src=probs_t[j * 128:(j + 1) * 128, i * 128:(i + 1) * 128])
            p_t_tile = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=p_t_tile, src=p_t_f32)
            v_tile = nl.ndarray((d_head, 128), dtype=v_ref.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_tile, src=v_ref[0:d_head, j * 128:(j + 1) * 128])
            v_t_psum = nl.ndarray((128, d_head), dtype=v_ref.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=v_t_psum, data=v_tile)
            v_t = nl.ndarray((128, d_head), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=v_t, src=v_t_psum)
            nisa.nc_matmul(dst=out_psum, stationary=p_t_tile, moving=v_t)
        sum_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=sum_tile, src=row_sum[i * 128:(i + 1) * 128, 0:1])
        inv_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv_sum, data=sum_tile)
        out_tile = nl.ndarray((128, d_head), dtype=out_ref.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out_tile, data=out_psum, op0=nl.multiply, operand0=inv_sum)
        nisa.dma_copy(dst=out_ref[i * 128:(i + 1) * 128, 0:d_head], src=out_tile)
    return out_ref
