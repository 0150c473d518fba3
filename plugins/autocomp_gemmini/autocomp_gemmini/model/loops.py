"""The LOOP_WS and LOOP_CONV_WS state machines.

Functionally each loop is computed in bulk with numpy (integer products summed in
float64, which is exact for int8 operands, then wrapped to int32). For timing, each
loop is expanded into the primitive commands its hardware state machine issues (mvin,
preload, compute, mvout per DIM x DIM tile), scheduled on the three units like any
other command.

Scratchpad / accumulator layout used by the state machines: A (or the input tile) in
scratchpad rows [0, half), B (or the weights) in [half, end), C in accumulator rows
[0, ...). Both loops overwrite those rows, as on the hardware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import isa
from .base import ArrayConfig, Counters, GemminiError, LoadConfig, StoreConfig
from .memory import Memory, read_rows
from .numerics import INT32_MAX, INT32_MIN, activate, scale_int, to_elem_int, wrap_int32

if TYPE_CHECKING:
    from ..config import GemminiConfig
    from .timing import TimingModel


class Machine(Protocol):
    """What a LOOP_* state machine reads and writes of the model: the Python model
    (`functional.Gemmini`) and the compiled one (`native_model.NativeGemmini`) both have it."""

    cfg: GemminiConfig | ArrayConfig
    dim: int
    is_float: bool
    elem_dtype: np.dtype
    acc_dtype: np.dtype
    mem: Memory
    timing: TimingModel
    counters: Counters
    ld: list[LoadConfig]
    st: StoreConfig
    acc: np.ndarray
    acc_used: np.ndarray
    spad_used: np.ndarray
    pending_writes: list[tuple[float, int, bytes]]
    loop_ws_regs: dict[int, tuple[int, int]]
    loop_conv_regs: dict[int, tuple[int, int]]


def _f(bitsval: int, lo: int, width: int = 16) -> int:
    return isa.bits(bitsval, lo, width)


def _need(g: Machine, regs: dict, functs: range | tuple, what: str) -> None:
    missing = [f for f in functs if f not in regs]
    if missing:
        raise GemminiError(
            f"{what} issued before its configuration commands (missing funct {missing})"
        )


def _load_matrix(
    g: Machine, addr: int, rows: int, cols: int, stride_elems: int, dtype: np.dtype, scale: float
) -> np.ndarray:
    """A rows x cols matrix from DRAM (row stride in elements), widened, with the mvin scale."""
    raw = read_rows(g.mem, addr, rows, cols * dtype.itemsize, stride_elems * dtype.itemsize)
    g.counters.bytes_in += rows * cols * dtype.itemsize
    mat = raw.view(dtype).reshape(rows, cols)
    if g.is_float:
        out = mat.astype(np.float64)
        return out * np.float32(scale) if scale != 1.0 else out
    out = mat.astype(np.int64)
    if scale != 1.0:
        lo, hi = (-128, 127) if dtype.itemsize == 1 else (INT32_MIN, INT32_MAX)
        out = scale_int(out, scale, lo, hi)
    return out.astype(np.float64)


def _store_result(
    g: Machine,
    addr: int,
    acc_vals: np.ndarray,
    stride_elems: int,
    full: bool,
    act: int,
    done: float,
) -> None:
    """Write accumulator values to DRAM as the store unit would (scale, activation, saturation)."""
    if full:
        out = acc_vals.astype(np.float32) if g.is_float else wrap_int32(acc_vals)
    elif g.is_float:
        out = activate(acc_vals.astype(np.float32) * np.float32(g.st.scale), act).astype(np.float32)
    else:
        out = to_elem_int(activate(scale_int(acc_vals, g.st.scale, INT32_MIN, INT32_MAX), act))
    data = np.ascontiguousarray(out).view(np.uint8).reshape(out.shape[0], -1)
    g.counters.bytes_out += data.size
    row_bytes = data.shape[1]
    stride = stride_elems * out.dtype.itemsize
    if stride == row_bytes:
        g.pending_writes.append((done, addr, data.tobytes()))
    else:
        for r in range(data.shape[0]):
            g.pending_writes.append((done, addr + r * stride, data[r].tobytes()))


# ---------------------------------------------------------------------------- LOOP_WS
def loop_ws(g: Machine, rs1: int, rs2: int, issued: float) -> None:
    regs = g.loop_ws_regs
    _need(g, regs, range(isa.LOOP_WS_CONFIG_BOUNDS, isa.LOOP_WS_CONFIG_STRIDES_DC + 1), "LOOP_WS")
    dim = g.dim
    b_rs1, b_rs2 = regs[isa.LOOP_WS_CONFIG_BOUNDS]
    I, J, K = _f(b_rs2, 0), _f(b_rs2, 16), _f(b_rs2, 32)
    pad_I, pad_J, pad_K = _f(b_rs1, 0), _f(b_rs1, 16), _f(b_rs1, 32)
    A, B = regs[isa.LOOP_WS_CONFIG_ADDRS_AB]
    D, C = regs[isa.LOOP_WS_CONFIG_ADDRS_DC]
    A_stride, B_stride = regs[isa.LOOP_WS_CONFIG_STRIDES_AB]
    D_stride, C_stride = regs[isa.LOOP_WS_CONFIG_STRIDES_DC]
    ex_accumulate = bool(rs1 & 1)
    full_C = bool(rs1 & 2)
    low_D = bool(rs1 & 4)
    act = _f(rs1, 8, 8)
    a_transpose, b_transpose = bool(rs2 & 1), bool(rs2 & 2)
    if act > isa.RELU:
        raise GemminiError(
            f"LOOP_WS activation {act} is not modelled (only NO_ACTIVATION and RELU)"
        )
    if min(I, J, K) == 0:
        raise GemminiError(f"LOOP_WS with an empty bound (I={I}, J={J}, K={K} tiles)")
    if pad_I >= dim or pad_J >= dim or pad_K >= dim:
        raise GemminiError(f"LOOP_WS padding ({pad_I}, {pad_J}, {pad_K}) must be below DIM={dim}")
    half_mats = g.cfg.spad_rows // 2 // dim
    acc_mats = g.cfg.acc_rows // dim
    if I * K > half_mats or K * J > half_mats:
        raise GemminiError(
            f"LOOP_WS tile I={I} J={J} K={K} needs {I * K} A and {K * J} B blocks; "
            f"each half of the scratchpad holds {half_mats}"
        )
    if I * J > acc_mats:
        raise GemminiError(
            f"LOOP_WS tile I={I} J={J} needs {I * J} accumulator blocks; "
            f"the accumulator holds {acc_mats}"
        )
    M, N, Kd = I * dim - pad_I, J * dim - pad_J, K * dim - pad_K

    # ---- functional, in bulk
    ed = g.elem_dtype
    if a_transpose:
        a_mat = _load_matrix(g, A, Kd, M, A_stride, ed, g.ld[0].scale).T
    else:
        a_mat = _load_matrix(g, A, M, Kd, A_stride, ed, g.ld[0].scale)
    if b_transpose:
        b_mat = _load_matrix(g, B, N, Kd, B_stride, ed, g.ld[1].scale).T
    else:
        b_mat = _load_matrix(g, B, Kd, N, B_stride, ed, g.ld[1].scale)
    if g.is_float:
        prod = (a_mat.astype(np.float32) @ b_mat.astype(np.float32)).astype(np.float64)
    else:
        prod = a_mat @ b_mat  # float64 is exact for int8 products summed over K < 2^37
    acc_tiles = (
        g.acc[: I * J * dim].reshape(I, J, dim, dim).transpose(0, 2, 1, 3).reshape(I * dim, J * dim)
    )
    if ex_accumulate:
        base = acc_tiles[:M, :N].astype(np.float64)
    elif D:
        d_dtype = ed if low_D else g.acc_dtype
        if D_stride == 0:  # repeating bias: one row for every output row
            base = np.repeat(_load_matrix(g, D, 1, N, 0, d_dtype, g.ld[2].scale), M, axis=0)
        else:
            base = _load_matrix(g, D, M, N, D_stride, d_dtype, g.ld[2].scale)
    else:
        base = np.zeros((M, N))
    total = base + prod
    full = np.zeros((I * dim, J * dim), np.float64)
    full[:M, :N] = total
    acc_new = full.astype(np.float32) if g.is_float else wrap_int32(full.astype(np.int64))
    g.acc[: I * J * dim] = (
        acc_new.reshape(I, dim, J, dim).transpose(0, 2, 1, 3).reshape(I * J * dim, dim)
    )
    g.acc_used[: I * J * dim] = True
    half = g.cfg.spad_rows // 2
    g.spad_used[: I * K * dim] = True
    g.spad_used[half : half + K * J * dim] = True
    g.counters.macs += I * J * K * dim**3
    g.counters.count("loop_ws_computes", I * J * K)

    # ---- timing: expand into the state machine's primitive commands
    tm = g.timing
    p = tm.p
    t = issued
    eb = ed.itemsize
    mvin_a = tm.dma_cost(dim, dim * eb)
    mvin_d = tm.dma_cost(dim, dim * (eb if low_D else 4))
    comp = tm.compute_cost(dim, dim)
    out_row_bytes = dim * (4 if full_C else eb)
    mvout = tm.dma_cost(dim, out_row_bytes)
    loaded_a: set = set()
    last_done = issued
    for j in range(J):
        for k in range(K):
            b_row = half + (k * J + j) * dim
            t += p.loop_issue
            tm.run("load", t, *mvin_a, writes=(("spad", b_row, dim),))
            for i in range(I):
                a_row = (i * K + k) * dim
                c_row = (i * J + j) * dim
                if (i, k) not in loaded_a:
                    loaded_a.add((i, k))
                    t += p.loop_issue
                    tm.run("load", t, *mvin_a, writes=(("spad", a_row, dim),))
                if k == 0 and D and not ex_accumulate:
                    t += p.loop_issue
                    tm.run("load", t, *mvin_d, writes=(("acc", c_row, dim),))
                t += p.loop_issue
                tm.run_preload(
                    t,
                    tm.preload_cost(dim, reuse=i > 0),
                    tm.preload_overlapped(dim, reuse=i > 0),
                    reads=(("spad", b_row, dim),) if i == 0 else (),
                )
                t += p.loop_issue
                tm.run_compute(
                    t, *comp, reads=(("spad", a_row, dim),), writes=(("acc", c_row, dim),)
                )
                if k == K - 1 and C:
                    t += p.loop_issue
                    done = tm.run(
                        "store",
                        t,
                        mvout[0],
                        mvout[1] + p.acc_read_latency,
                        reads=(("acc", c_row, dim),),
                    )
                    last_done = max(last_done, done)
    if C:
        _store_result(g, C, total, C_stride, full_C, act, last_done)


# ---------------------------------------------------------------------------- LOOP_CONV_WS
def loop_conv_ws(g: Machine, rs1: int, rs2: int, issued: float) -> None:
    regs = g.loop_conv_regs
    _need(g, regs, range(isa.LOOP_CONV_WS_CONFIG_1, isa.LOOP_CONV_WS_CONFIG_6 + 1), "LOOP_CONV_WS")
    dim = g.dim
    c1a, c1b = regs[16]
    c2a, c2b = regs[17]
    c3a, c3b = regs[18]
    c4a, c4b = regs[19]
    weights, output = regs[20]
    bias, inp = regs[21]
    in_dim, in_channels = (
        _f(c1a, 16),
        _f(c1a, 32),
    )  # batch_size and out_channels: whole-layer sizes, unused
    out_dim, stride = _f(c1b, 0), _f(c1b, 32)
    kernel_dim = _f(c2a, 48)
    batches, pochs = _f(c2b, 48), _f(c2b, 0)  # porows/pocols equal orows/ocols without pooling
    krows, kcols, kchs, lpad = _f(c3a, 48), _f(c3a, 32), _f(c3a, 16), _f(c3a, 0)
    rpad, upad, dpad = _f(c3b, 48), _f(c3b, 32), _f(c3b, 16)
    orows, dilation = _f(c4a, 48), _f(c4a, 0, 10)
    in_stride, weight_stride, out_stride, ocols = _f(c4b, 48), _f(c4b, 32), _f(c4b, 16), _f(c4b, 0)
    no_bias = bool(rs1 & 1)
    unsupported = [
        name
        for name, bit in (
            ("wrot180", 1),
            ("trans_output_1203", 2),
            ("trans_weight_1203", 3),
            ("trans_weight_0132", 4),
            ("trans_input_3120", 5),
            ("dw", 6),
        )
        if rs1 >> bit & 1
    ]
    no_pool = bool(rs2 & 1)
    unsupported += [
        name for name, bit in (("downsample", 1), ("input_dilated", 2)) if rs2 >> bit & 1
    ]
    act = _f(rs2, 3, 3)
    if not no_pool:
        unsupported.append("pooling")
    if dilation > 1:
        unsupported.append("kernel_dilation")
    if unsupported:
        raise GemminiError(f"LOOP_CONV_WS options not modelled: {', '.join(unsupported)}")
    if act > isa.RELU:
        raise GemminiError(f"LOOP_CONV_WS activation {act} is not modelled")
    if krows != kernel_dim or kcols != kernel_dim or kchs != in_channels:
        raise GemminiError(
            "LOOP_CONV_WS tiles must cover the whole kernel and all input channels "
            f"(krows={krows} kcols={kcols} kchs={kchs}; kernel {kernel_dim}, {in_channels} channels)"
        )
    if min(batches, orows, ocols, pochs, stride) == 0:
        raise GemminiError("LOOP_CONV_WS with an empty tile or stride 0")
    irows = (orows - 1) * stride + krows
    icols = (ocols - 1) * stride + kcols
    real_rows, real_cols = irows - upad - dpad, icols - lpad - rpad
    ich_blocks, och_blocks = -(-kchs // dim), -(-pochs // dim)
    half = g.cfg.spad_rows // 2
    in_rows_needed = batches * irows * icols * ich_blocks
    w_rows_needed = krows * kcols * kchs * och_blocks
    pixels = batches * orows * ocols
    if in_rows_needed > half or w_rows_needed > half:
        raise GemminiError(
            f"LOOP_CONV_WS tile needs {in_rows_needed} input and {w_rows_needed} weight "
            f"scratchpad rows; each half holds {half}"
        )
    if -(-pixels // dim) * dim * och_blocks > g.cfg.acc_rows:
        raise GemminiError(
            f"LOOP_CONV_WS tile of {pixels} output pixels x {pochs} channels does not fit "
            f"the {g.cfg.acc_rows}-row accumulator"
        )
    if real_rows <= 0 or real_cols <= 0:
        raise GemminiError("LOOP_CONV_WS padding covers the whole input tile")

    # ---- functional
    ed = g.elem_dtype
    eb = ed.itemsize
    rows = (
        read_rows(
            g.mem, inp, batches * real_rows, real_cols * in_stride * eb, in_dim * in_stride * eb
        )
        if batches == 1
        else np.concatenate(
            [
                read_rows(
                    g.mem,
                    inp + b * in_dim * in_dim * in_stride * eb,
                    real_rows,
                    real_cols * in_stride * eb,
                    in_dim * in_stride * eb,
                )
                for b in range(batches)
            ]
        )
    )
    x = (
        rows.view(ed)
        .reshape(batches, real_rows, real_cols, in_stride)[..., :kchs]
        .astype(np.float64)
    )
    g.counters.bytes_in += x.size * eb
    xp = np.zeros((batches, irows, icols, kchs))
    xp[:, upad : upad + real_rows, lpad : lpad + real_cols] = x
    w_raw = read_rows(g.mem, weights, krows * kcols * kchs, pochs * eb, weight_stride * eb)
    w = w_raw.view(ed).reshape(krows, kcols, kchs, pochs).astype(np.float64)
    g.counters.bytes_in += w.size * eb
    win = np.lib.stride_tricks.sliding_window_view(xp, (krows, kcols), axis=(1, 2))
    win = win[:, ::stride, ::stride][:, :orows, :ocols]  # (b, orows, ocols, kchs, krows, kcols)
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(pixels, krows * kcols * kchs)
    if g.is_float:
        res = (cols.astype(np.float32) @ w.reshape(-1, pochs).astype(np.float32)).astype(np.float64)
    else:
        res = cols @ w.reshape(-1, pochs)
    if bias and not no_bias:
        b_raw = np.frombuffer(g.mem.read(bias, pochs * 4), g.acc_dtype).astype(np.float64)
        res = res + b_raw[None, :]
    g.counters.macs += pixels * krows * kcols * kchs * pochs
    g.counters.count(
        "loop_conv_computes", och_blocks * krows * kcols * ich_blocks * -(-pixels // dim)
    )
    acc_vals = res.astype(np.float32) if g.is_float else wrap_int32(res.astype(np.int64))
    pix_blocks = -(-pixels // dim)
    acc_img = np.zeros((pix_blocks * dim, och_blocks * dim), g.acc_dtype)
    acc_img[:pixels, :pochs] = acc_vals
    g.acc[: pix_blocks * dim * och_blocks] = (
        acc_img.reshape(pix_blocks * dim, och_blocks, dim).transpose(1, 0, 2).reshape(-1, dim)
    )
    g.acc_used[: pix_blocks * dim * och_blocks] = True
    g.spad_used[:in_rows_needed] = True
    g.spad_used[half : half + w_rows_needed] = True

    # ---- timing: primitive commands of the state machine
    tm = g.timing
    p = tm.p
    t = issued
    in_mvin = tm.dma_cost(dim, dim * eb)
    for _ in range(batches * real_rows * -(-real_cols // dim) * ich_blocks):
        t += p.loop_issue
        row = (_ * dim) % max(half - dim, 1)
        tm.run("load", t, *in_mvin, writes=(("spad", row, dim),))
    w_mvin = tm.dma_cost(dim, min(pochs, dim * g.cfg.max_block_len) * eb)
    for n in range(krows * kcols * ich_blocks * -(-och_blocks // g.cfg.max_block_len)):
        t += p.loop_issue
        tm.run("load", t, *w_mvin, writes=(("spad", half + (n * dim) % max(half - dim, 1), dim),))
    bias_mvin = tm.dma_cost(dim, dim * 4)
    comp = tm.compute_cost(dim, dim)
    out_mvout = tm.dma_cost(dim, dim * eb)
    last_done = t
    for ob in range(och_blocks):
        for pb in range(pix_blocks):
            acc_row = ob * pix_blocks * dim + pb * dim
            if bias and not no_bias:
                t += p.loop_issue
                tm.run("load", t, *bias_mvin, writes=(("acc", acc_row, dim),))
        for n in range(krows * kcols * ich_blocks):
            t += p.loop_issue
            w_row = half + (n * dim) % max(half - dim, 1)
            tm.run_preload(
                t,
                tm.preload_cost(dim, reuse=False),
                tm.preload_overlapped(dim, reuse=False),
                reads=(("spad", w_row, dim),),
            )
            for pb in range(pix_blocks):
                acc_row = ob * pix_blocks * dim + pb * dim
                t += p.loop_issue
                tm.run_compute(
                    t,
                    *comp,
                    reads=(("spad", (pb * dim) % max(half - dim, 1), dim),),
                    writes=(("acc", acc_row, dim),),
                )
        if output:
            for pb in range(pix_blocks):
                t += p.loop_issue
                acc_row = ob * pix_blocks * dim + pb * dim
                done = tm.run(
                    "store",
                    t,
                    out_mvout[0],
                    out_mvout[1] + p.acc_read_latency,
                    reads=(("acc", acc_row, dim),),
                )
                last_done = max(last_done, done)
    if output:
        out_vals = res.reshape(batches, orows, ocols, pochs)
        for b in range(batches):
            for r in range(orows):
                addr = output + ((b * out_dim + r) * out_dim) * out_stride * eb
                _store_result(g, addr, out_vals[b, r], out_stride, False, act, last_done)
