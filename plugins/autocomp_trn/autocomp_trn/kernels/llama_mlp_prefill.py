import nki
import nki.isa as nisa
import nki.language as nl


def transposed(dst, src, rows, cols):
    """dst [cols, rows] (SBUF) = src [rows, cols] (SBUF) transposed on TensorE."""
    t_psum = nl.ndarray((cols, rows), dtype=src.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=t_psum, data=src)
    nisa.tensor_copy(dst=dst, src=t_psum)


@nki.jit
def solution(x, norm_weight, up_proj, gate_proj, down_proj):
    # RMSNorm then the SwiGLU MLP for T <= 128 tokens, weights [out, in] (transposed on TensorE):
    # the intermediate activations are computed transposed ([128 intermediate, T] per tile)
    _, T, H = x.shape
    INTER = up_proj.shape[0]
    out = nl.ndarray((1, T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    x2 = x.reshape((T, H))

    # h = x * rsqrt(mean(x^2) + eps) * norm_weight
    x_tile = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_tile, src=x2)
    g_tile = nl.ndarray((T, H), dtype=norm_weight.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_tile, src=norm_weight.reshape((1, H)).broadcast(0, T))
    squares = nl.ndarray((T, H), dtype=nl.float32, buffer=nl.sbuf)
    square_sum = nl.ndarray((T, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=squares, op=nl.square, data=x_tile, reduce_op=nl.add, reduce_res=square_sum)
    mean_eps = nl.ndarray((T, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(
        dst=mean_eps, data=square_sum, op0=nl.multiply, operand0=1.0 / H, op1=nl.add, operand1=1e-5
    )
    rstd = nl.ndarray((T, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=rstd, op=nl.rsqrt, data=mean_eps)
    normed = nl.ndarray((T, H), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=normed, data=x_tile, op0=nl.multiply, operand0=rstd)
    h = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=h, data1=normed, data2=g_tile, op=nl.multiply)

    # h transposed to [H, T] in 128-row tiles
    h_t = nl.ndarray((128, H // 128, T), dtype=x.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(H // 128):
        transposed(h_t[0:128, k, 0:T], h[0:T, k * 128 : (k + 1) * 128], T, 128)

    # act.T = silu(gate.T) * up.T, one 128-row tile of the intermediate at a time
    act_t = nl.ndarray((128, INTER // 128, T), dtype=x.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(INTER // 128):
        gate_psum = nl.ndarray((128, T), dtype=nl.float32, buffer=nl.psum)
        up_psum = nl.ndarray((128, T), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(H // 128):
            for w, acc in ((gate_proj, gate_psum), (up_proj, up_psum)):
                w_tile = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_tile, src=w[j * 128 : (j + 1) * 128, k * 128 : (k + 1) * 128])
                w_t = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.sbuf)
                transposed(w_t, w_tile, 128, 128)
                nisa.nc_matmul(dst=acc, stationary=w_t, moving=h_t[0:128, k, 0:T])
        gate_act = nl.ndarray((128, T), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=gate_act, op=nl.silu, data=gate_psum)
        nisa.tensor_tensor(dst=act_t[0:128, j, 0:T], data1=gate_act, data2=up_psum, op=nl.multiply)

    # out = act @ down.T, 128 output columns per PSUM tile
    for n in nl.affine_range(H // 128):
        out_psum = nl.ndarray((T, 128), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(INTER // 128):
            d_tile = nl.ndarray((128, 128), dtype=down_proj.dtype, buffer=nl.sbuf)
            nisa.dma_copy(
                dst=d_tile, src=down_proj[n * 128 : (n + 1) * 128, j * 128 : (j + 1) * 128]
            )
            d_t = nl.ndarray((128, 128), dtype=down_proj.dtype, buffer=nl.sbuf)
            transposed(d_t, d_tile, 128, 128)
            nisa.nc_matmul(dst=out_psum, stationary=act_t[0:128, j, 0:T], moving=d_t)
        out_tile = nl.ndarray((T, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=out_tile, src=out_psum)
        nisa.dma_copy(dst=out.reshape((T, H))[0:T, n * 128 : (n + 1) * 128], src=out_tile)
    return out
