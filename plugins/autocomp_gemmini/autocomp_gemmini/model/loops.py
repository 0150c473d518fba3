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

from dataclasses import dataclass
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


class LoopIssue:
    """The loop unit's command issue: one primitive command every `loop_issue` cycles, to the
    load, execute or store unit, as the hardware's arbiter hands its stages' commands on."""

    def __init__(self, tm: TimingModel, issued: float) -> None:
        self.tm = tm
        self.t = issued

    def _next(self) -> float:
        self.t += self.tm.p.loop_issue
        return self.t

    def mvin(self, cost: tuple[float, float], space: str, row: int, dim: int) -> None:
        self.tm.run("load", self._next(), *cost, writes=((space, row, dim),))

    def preload(self, dim: int, reuse: bool, reads: tuple) -> None:
        t, tm = self._next(), self.tm
        cost, overlapped = (
            tm.preload_cost(dim, reuse=reuse),
            tm.preload_overlapped(dim, reuse=reuse),
        )
        tm.run_preload(t, cost, overlapped, reads=reads)

    def compute(self, cost: tuple[float, float], a_row: int, acc_row: int, dim: int) -> None:
        self.tm.run_compute(
            self._next(), *cost, reads=(("spad", a_row, dim),), writes=(("acc", acc_row, dim),)
        )

    def mvout(self, cost: tuple[float, float], acc_row: int, dim: int) -> float:
        """An mvout of accumulator rows; returns when its data lands in memory."""
        t = self._next()
        latency = cost[1] + self.tm.p.acc_read_latency
        return self.tm.run("store", t, cost[0], latency, reads=(("acc", acc_row, dim),))


# ---------------------------------------------------------------------------- LOOP_WS
@dataclass(frozen=True)
class WsLoop:
    """A LOOP_WS command's operands: its four configuration registers and rs1/rs2 decoded
    (gemmini.h, gemmini_loop_ws). I, J, K count DIM x DIM tiles; pad_* the rows or columns
    the last tile leaves out; A, B, D, C are DRAM addresses (D: the bias, 0 for none; C: the
    output, 0 to keep it in the accumulator), strides in elements."""

    I: int
    J: int
    K: int
    pad_I: int
    pad_J: int
    pad_K: int
    A: int
    B: int
    D: int
    C: int
    A_stride: int
    B_stride: int
    D_stride: int
    C_stride: int
    ex_accumulate: bool
    full_C: bool
    low_D: bool
    act: int
    a_transpose: bool
    b_transpose: bool

    @classmethod
    def decode(cls, regs: dict[int, tuple[int, int]], rs1: int, rs2: int) -> WsLoop:
        b_rs1, b_rs2 = regs[isa.LOOP_WS_CONFIG_BOUNDS]
        A, B = regs[isa.LOOP_WS_CONFIG_ADDRS_AB]
        D, C = regs[isa.LOOP_WS_CONFIG_ADDRS_DC]
        A_stride, B_stride = regs[isa.LOOP_WS_CONFIG_STRIDES_AB]
        D_stride, C_stride = regs[isa.LOOP_WS_CONFIG_STRIDES_DC]
        return cls(
            I=_f(b_rs2, 0),
            J=_f(b_rs2, 16),
            K=_f(b_rs2, 32),
            pad_I=_f(b_rs1, 0),
            pad_J=_f(b_rs1, 16),
            pad_K=_f(b_rs1, 32),
            A=A,
            B=B,
            D=D,
            C=C,
            A_stride=A_stride,
            B_stride=B_stride,
            D_stride=D_stride,
            C_stride=C_stride,
            ex_accumulate=bool(rs1 & 1),
            full_C=bool(rs1 & 2),
            low_D=bool(rs1 & 4),
            act=_f(rs1, 8, 8),
            a_transpose=bool(rs2 & 1),
            b_transpose=bool(rs2 & 2),
        )

    def check(self, dim: int, cfg: GemminiConfig | ArrayConfig) -> None:
        """GemminiError for a loop the model does not run: an activation other than ReLU, an
        empty or over-padded bound, tiles that do not fit the scratchpad or accumulator."""
        I, J, K = self.I, self.J, self.K
        if self.act > isa.RELU:
            raise GemminiError(
                f"LOOP_WS activation {self.act} is not modelled (only NO_ACTIVATION and RELU)"
            )
        if min(I, J, K) == 0:
            raise GemminiError(f"LOOP_WS with an empty bound (I={I}, J={J}, K={K} tiles)")
        if self.pad_I >= dim or self.pad_J >= dim or self.pad_K >= dim:
            raise GemminiError(
                f"LOOP_WS padding ({self.pad_I}, {self.pad_J}, {self.pad_K}) must be below DIM={dim}"
            )
        half_mats = cfg.spad_rows // 2 // dim
        acc_mats = cfg.acc_rows // dim
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


def loop_ws(g: Machine, rs1: int, rs2: int, issued: float) -> None:
    regs = g.loop_ws_regs
    _need(g, regs, range(isa.LOOP_WS_CONFIG_BOUNDS, isa.LOOP_WS_CONFIG_STRIDES_DC + 1), "LOOP_WS")
    w = WsLoop.decode(regs, rs1, rs2)
    w.check(g.dim, g.cfg)
    total = _ws_compute(g, w)
    last_done = _ws_issue(g, w, issued)
    if w.C:
        _store_result(g, w.C, total, w.C_stride, w.full_C, w.act, last_done)


def _ws_compute(g: Machine, w: WsLoop) -> np.ndarray:
    """The loop's result in bulk: C = A x B + (D, or the accumulator's tiles with
    ex_accumulate), left in the accumulator tiles; returns the M x N values for the store."""
    dim = g.dim
    I, J, K = w.I, w.J, w.K
    M, N, Kd = I * dim - w.pad_I, J * dim - w.pad_J, K * dim - w.pad_K
    ed = g.elem_dtype
    if w.a_transpose:
        a_mat = _load_matrix(g, w.A, Kd, M, w.A_stride, ed, g.ld[0].scale).T
    else:
        a_mat = _load_matrix(g, w.A, M, Kd, w.A_stride, ed, g.ld[0].scale)
    if w.b_transpose:
        b_mat = _load_matrix(g, w.B, N, Kd, w.B_stride, ed, g.ld[1].scale).T
    else:
        b_mat = _load_matrix(g, w.B, Kd, N, w.B_stride, ed, g.ld[1].scale)
    if g.is_float:
        prod = (a_mat.astype(np.float32) @ b_mat.astype(np.float32)).astype(np.float64)
    else:
        prod = a_mat @ b_mat  # float64 is exact for int8 products summed over K < 2^37
    acc_tiles = (
        g.acc[: I * J * dim].reshape(I, J, dim, dim).transpose(0, 2, 1, 3).reshape(I * dim, J * dim)
    )
    if w.ex_accumulate:
        base = acc_tiles[:M, :N].astype(np.float64)
    elif w.D:
        d_dtype = ed if w.low_D else g.acc_dtype
        if w.D_stride == 0:  # repeating bias: one row for every output row
            base = np.repeat(_load_matrix(g, w.D, 1, N, 0, d_dtype, g.ld[2].scale), M, axis=0)
        else:
            base = _load_matrix(g, w.D, M, N, w.D_stride, d_dtype, g.ld[2].scale)
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
    return total


def _ws_issue(g: Machine, w: WsLoop, issued: float) -> float:
    """The primitive commands the LOOP_WS state machine issues, in its order. Its stages and
    their rows: B block (k, j) in scratchpad rows half + (k J + j) DIM, A block (i, k) in
    (i K + k) DIM, C block (i, j) in accumulator rows (i J + j) DIM. Per (j, k): load B; per
    i: load A (while j = 0: the blocks stay for the other columns), load D (k = 0), preload
    B, compute, store C (k = K - 1). Returns when the last store's data lands."""
    dim, tm = g.dim, g.timing
    half = g.cfg.spad_rows // 2
    eb = g.elem_dtype.itemsize
    mvin_a = tm.dma_cost(dim, dim * eb)
    mvin_d = tm.dma_cost(dim, dim * (eb if w.low_D else 4))
    comp = tm.compute_cost(dim, dim)
    mvout = tm.dma_cost(dim, dim * (4 if w.full_C else eb))
    load_d = w.D and not w.ex_accumulate
    issue = LoopIssue(tm, issued)
    last_done = issued
    for j in range(w.J):
        for k in range(w.K):
            b_row = half + (k * w.J + j) * dim
            issue.mvin(mvin_a, "spad", b_row, dim)
            for i in range(w.I):
                a_row = (i * w.K + k) * dim
                c_row = (i * w.J + j) * dim
                if j == 0:
                    issue.mvin(mvin_a, "spad", a_row, dim)
                if k == 0 and load_d:
                    issue.mvin(mvin_d, "acc", c_row, dim)
                issue.preload(dim, i > 0, (("spad", b_row, dim),) if i == 0 else ())
                issue.compute(comp, a_row, c_row, dim)
                if k == w.K - 1 and w.C:
                    last_done = max(last_done, issue.mvout(mvout, c_row, dim))
    return last_done


# ---------------------------------------------------------------------------- LOOP_CONV_WS
#: LOOP_CONV_WS options the model does not run, by their bit in rs1 and in rs2
CONV_RS1_OPTIONS = (
    ("wrot180", 1),
    ("trans_output_1203", 2),
    ("trans_weight_1203", 3),
    ("trans_weight_0132", 4),
    ("trans_input_3120", 5),
    ("dw", 6),
)
CONV_RS2_OPTIONS = (("downsample", 1), ("input_dilated", 2))


@dataclass(frozen=True)
class ConvLoop:
    """A LOOP_CONV_WS command's operands: its six configuration registers and rs1/rs2 decoded
    (gemmini.h, gemmini_loop_conv_ws). The tile is `batches` images of orows x ocols output
    pixels and `pochs` output channels, from krows x kcols x kchs weights; *pad the input
    rows or columns outside the image; inp, weights, bias, output are DRAM addresses."""

    in_dim: int
    in_channels: int
    out_dim: int
    stride: int
    kernel_dim: int
    batches: int
    pochs: int  # porows / pocols equal orows / ocols without pooling
    krows: int
    kcols: int
    kchs: int
    lpad: int
    rpad: int
    upad: int
    dpad: int
    orows: int
    ocols: int
    in_stride: int
    weight_stride: int
    out_stride: int
    inp: int
    weights: int
    bias: int
    output: int
    no_bias: bool
    act: int
    unsupported: tuple[str, ...]  # options set that the model does not run

    @classmethod
    def decode(cls, regs: dict[int, tuple[int, int]], rs1: int, rs2: int) -> ConvLoop:
        # batch_size and out_channels (in c1a, c2a) are whole-layer sizes, unused
        c1a, c1b = regs[isa.LOOP_CONV_WS_CONFIG_1]
        c2a, c2b = regs[isa.LOOP_CONV_WS_CONFIG_1 + 1]
        c3a, c3b = regs[isa.LOOP_CONV_WS_CONFIG_1 + 2]
        c4a, c4b = regs[isa.LOOP_CONV_WS_CONFIG_1 + 3]
        weights, output = regs[isa.LOOP_CONV_WS_CONFIG_1 + 4]
        bias, inp = regs[isa.LOOP_CONV_WS_CONFIG_6]
        unsupported = [name for name, bit in CONV_RS1_OPTIONS if rs1 >> bit & 1]
        unsupported += [name for name, bit in CONV_RS2_OPTIONS if rs2 >> bit & 1]
        if not rs2 & 1:  # no_pool clear
            unsupported.append("pooling")
        if _f(c4a, 0, 10) > 1:
            unsupported.append("kernel_dilation")
        return cls(
            in_dim=_f(c1a, 16),
            in_channels=_f(c1a, 32),
            out_dim=_f(c1b, 0),
            stride=_f(c1b, 32),
            kernel_dim=_f(c2a, 48),
            batches=_f(c2b, 48),
            pochs=_f(c2b, 0),
            krows=_f(c3a, 48),
            kcols=_f(c3a, 32),
            kchs=_f(c3a, 16),
            lpad=_f(c3a, 0),
            rpad=_f(c3b, 48),
            upad=_f(c3b, 32),
            dpad=_f(c3b, 16),
            orows=_f(c4a, 48),
            ocols=_f(c4b, 0),
            in_stride=_f(c4b, 48),
            weight_stride=_f(c4b, 32),
            out_stride=_f(c4b, 16),
            inp=inp,
            weights=weights,
            bias=bias,
            output=output,
            no_bias=bool(rs1 & 1),
            act=_f(rs2, 3, 3),
            unsupported=tuple(unsupported),
        )

    # the input tile, with its padding, and the blocks of DIM the stages work in
    @property
    def irows(self) -> int:
        return (self.orows - 1) * self.stride + self.krows

    @property
    def icols(self) -> int:
        return (self.ocols - 1) * self.stride + self.kcols

    @property
    def real_rows(self) -> int:
        return self.irows - self.upad - self.dpad

    @property
    def real_cols(self) -> int:
        return self.icols - self.lpad - self.rpad

    @property
    def pixels(self) -> int:
        return self.batches * self.orows * self.ocols

    def blocks(self, dim: int) -> tuple[int, int, int]:
        """Input-channel, output-channel and output-pixel blocks of DIM."""
        return -(-self.kchs // dim), -(-self.pochs // dim), -(-self.pixels // dim)

    def scratchpad_rows(self, dim: int) -> tuple[int, int]:
        """Rows the input tile and the weights take, each in its half of the scratchpad."""
        ich_blocks, och_blocks, _ = self.blocks(dim)
        inp = self.batches * self.irows * self.icols * ich_blocks
        return inp, self.krows * self.kcols * self.kchs * och_blocks

    def check(self, dim: int, cfg: GemminiConfig | ArrayConfig) -> None:
        """GemminiError for a loop the model does not run: options it does not model, tiles
        that are not the whole kernel, empty, or too large for the scratchpad or accumulator."""
        if self.unsupported:
            raise GemminiError(f"LOOP_CONV_WS options not modelled: {', '.join(self.unsupported)}")
        if self.act > isa.RELU:
            raise GemminiError(f"LOOP_CONV_WS activation {self.act} is not modelled")
        if (
            self.krows != self.kernel_dim
            or self.kcols != self.kernel_dim
            or self.kchs != self.in_channels
        ):
            raise GemminiError(
                "LOOP_CONV_WS tiles must cover the whole kernel and all input channels "
                f"(krows={self.krows} kcols={self.kcols} kchs={self.kchs}; kernel "
                f"{self.kernel_dim}, {self.in_channels} channels)"
            )
        if min(self.batches, self.orows, self.ocols, self.pochs, self.stride) == 0:
            raise GemminiError("LOOP_CONV_WS with an empty tile or stride 0")
        half = cfg.spad_rows // 2
        in_rows_needed, w_rows_needed = self.scratchpad_rows(dim)
        if in_rows_needed > half or w_rows_needed > half:
            raise GemminiError(
                f"LOOP_CONV_WS tile needs {in_rows_needed} input and {w_rows_needed} weight "
                f"scratchpad rows; each half holds {half}"
            )
        _, och_blocks, pix_blocks = self.blocks(dim)
        if pix_blocks * dim * och_blocks > cfg.acc_rows:
            raise GemminiError(
                f"LOOP_CONV_WS tile of {self.pixels} output pixels x {self.pochs} channels does "
                f"not fit the {cfg.acc_rows}-row accumulator"
            )
        if self.real_rows <= 0 or self.real_cols <= 0:
            raise GemminiError("LOOP_CONV_WS padding covers the whole input tile")


def loop_conv_ws(g: Machine, rs1: int, rs2: int, issued: float) -> None:
    regs = g.loop_conv_regs
    _need(g, regs, range(isa.LOOP_CONV_WS_CONFIG_1, isa.LOOP_CONV_WS_CONFIG_6 + 1), "LOOP_CONV_WS")
    c = ConvLoop.decode(regs, rs1, rs2)
    c.check(g.dim, g.cfg)
    res = _conv_compute(g, c)
    last_done = _conv_issue(g, c, issued)
    if c.output:
        eb = g.elem_dtype.itemsize
        out_vals = res.reshape(c.batches, c.orows, c.ocols, c.pochs)
        for b in range(c.batches):
            for r in range(c.orows):
                addr = c.output + ((b * c.out_dim + r) * c.out_dim) * c.out_stride * eb
                _store_result(g, addr, out_vals[b, r], c.out_stride, False, c.act, last_done)


def _conv_input(g: Machine, c: ConvLoop) -> np.ndarray:
    """The input tile (batches, irows, icols, kchs) from DRAM, zero where padded, widened."""
    ed = g.elem_dtype
    eb = ed.itemsize
    real_rows, real_cols = c.real_rows, c.real_cols
    row_bytes, image_row = real_cols * c.in_stride * eb, c.in_dim * c.in_stride * eb
    if c.batches == 1:
        rows = read_rows(g.mem, c.inp, c.batches * real_rows, row_bytes, image_row)
    else:
        image = c.in_dim * c.in_dim * c.in_stride * eb
        rows = np.concatenate(
            [
                read_rows(g.mem, c.inp + b * image, real_rows, row_bytes, image_row)
                for b in range(c.batches)
            ]
        )
    x = (
        rows.view(ed)
        .reshape(c.batches, real_rows, real_cols, c.in_stride)[..., : c.kchs]
        .astype(np.float64)
    )
    g.counters.bytes_in += x.size * eb
    xp = np.zeros((c.batches, c.irows, c.icols, c.kchs))
    xp[:, c.upad : c.upad + real_rows, c.lpad : c.lpad + real_cols] = x
    return xp


def _conv_compute(g: Machine, c: ConvLoop) -> np.ndarray:
    """The convolution in bulk (im2col, one product), plus the bias, left in the accumulator
    blocks; returns the (pixels, pochs) values for the store."""
    dim = g.dim
    ed = g.elem_dtype
    eb = ed.itemsize
    krows, kcols, kchs, pochs, pixels = c.krows, c.kcols, c.kchs, c.pochs, c.pixels
    xp = _conv_input(g, c)
    w_raw = read_rows(g.mem, c.weights, krows * kcols * kchs, pochs * eb, c.weight_stride * eb)
    w = w_raw.view(ed).reshape(krows, kcols, kchs, pochs).astype(np.float64)
    g.counters.bytes_in += w.size * eb
    win = np.lib.stride_tricks.sliding_window_view(xp, (krows, kcols), axis=(1, 2))
    win = win[:, :: c.stride, :: c.stride][
        :, : c.orows, : c.ocols
    ]  # (b, orows, ocols, kchs, krows, kcols)
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(pixels, krows * kcols * kchs)
    if g.is_float:
        res = (cols.astype(np.float32) @ w.reshape(-1, pochs).astype(np.float32)).astype(np.float64)
    else:
        res = cols @ w.reshape(-1, pochs)
    if c.bias and not c.no_bias:
        b_raw = np.frombuffer(g.mem.read(c.bias, pochs * 4), g.acc_dtype).astype(np.float64)
        res = res + b_raw[None, :]
    ich_blocks, och_blocks, pix_blocks = c.blocks(dim)
    g.counters.macs += pixels * krows * kcols * kchs * pochs
    g.counters.count("loop_conv_computes", och_blocks * krows * kcols * ich_blocks * pix_blocks)
    acc_vals = res.astype(np.float32) if g.is_float else wrap_int32(res.astype(np.int64))
    acc_img = np.zeros((pix_blocks * dim, och_blocks * dim), g.acc_dtype)
    acc_img[:pixels, :pochs] = acc_vals
    g.acc[: pix_blocks * dim * och_blocks] = (
        acc_img.reshape(pix_blocks * dim, och_blocks, dim).transpose(1, 0, 2).reshape(-1, dim)
    )
    g.acc_used[: pix_blocks * dim * och_blocks] = True
    in_rows_needed, w_rows_needed = c.scratchpad_rows(dim)
    half = g.cfg.spad_rows // 2
    g.spad_used[:in_rows_needed] = True
    g.spad_used[half : half + w_rows_needed] = True
    return res


def _conv_issue(g: Machine, c: ConvLoop, issued: float) -> float:
    """The primitive commands the LOOP_CONV_WS state machine issues, in its order: the input
    tile's mvins (scratchpad rows from 0), the weights' (from half), then per output-channel
    block its bias mvins, per kernel position and input-channel block a preload of the weights
    and a compute per pixel block, and the output blocks' mvouts. Accumulator block (och block
    ob, pixel block pb) is rows (ob pix_blocks + pb) DIM; each stage cycles through the rows of
    its scratchpad half. Returns when the last store's data lands."""
    dim, tm = g.dim, g.timing
    half = g.cfg.spad_rows // 2
    wrap = max(half - dim, 1)
    eb = g.elem_dtype.itemsize
    ich_blocks, och_blocks, pix_blocks = c.blocks(dim)
    kernel_blocks = c.krows * c.kcols * ich_blocks
    issue = LoopIssue(tm, issued)
    in_mvin = tm.dma_cost(dim, dim * eb)
    for n in range(c.batches * c.real_rows * -(-c.real_cols // dim) * ich_blocks):
        issue.mvin(in_mvin, "spad", (n * dim) % wrap, dim)
    max_block_len = g.cfg.max_block_len
    w_mvin = tm.dma_cost(dim, min(c.pochs, dim * max_block_len) * eb)
    for n in range(kernel_blocks * -(-och_blocks // max_block_len)):
        issue.mvin(w_mvin, "spad", half + (n * dim) % wrap, dim)
    bias_mvin = tm.dma_cost(dim, dim * 4)
    comp = tm.compute_cost(dim, dim)
    out_mvout = tm.dma_cost(dim, dim * eb)
    last_done = issue.t
    for ob in range(och_blocks):
        acc_rows = [(ob * pix_blocks + pb) * dim for pb in range(pix_blocks)]
        if c.bias and not c.no_bias:
            for acc_row in acc_rows:
                issue.mvin(bias_mvin, "acc", acc_row, dim)
        for n in range(kernel_blocks):
            issue.preload(dim, False, (("spad", half + (n * dim) % wrap, dim),))
            for pb, acc_row in enumerate(acc_rows):
                issue.compute(comp, (pb * dim) % wrap, acc_row, dim)
        if c.output:
            for acc_row in acc_rows:
                last_done = max(last_done, issue.mvout(out_mvout, acc_row, dim))
    return last_done
