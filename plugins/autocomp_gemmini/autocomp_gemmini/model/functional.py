"""Bit-exact functional model of Gemmini's RoCC commands (numpy), driving the timing model.

State: the scratchpad (rows of DIM elem_t), the accumulator (rows of DIM acc_t), the
execute / load / store configurations, the preloaded weights (WS) or array contents (OS),
and the LOOP_WS / LOOP_CONV_WS configuration registers. `execute(funct, rs1, rs2)` runs
one command. A malformed command (rows past the end of the scratchpad, a compute with no
preload, an unsupported mode) raises `GemminiError` with a one-line reason.

Results of MVOUT become visible in main memory only when the store completes in the
timing model (or at a fence), so a CPU that reads them without a fence sees stale data,
as on the hardware.

Integer arithmetic is done in float64 (`wide_dtype`): int8 x int32 products summed over
at most 32 terms stay below 2^53, so every value is exact and numpy can use BLAS for the
small matrix products, which is several times faster than its integer loops. fp32
arithmetic is float32, as on the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import isa
from .base import (
    ArrayConfig,
    Counters,
    GemminiError,
    LoadConfig,
    StoreConfig,
    f32_from_bits,
)
from .machine import GemminiBase
from .memory import Memory, read_rows
from .numerics import (
    INT32_MAX,
    INT32_MIN,
    activate,
    rounding_shift,
    scale_int,
    to_elem_int,
    wrap_int32,
)
from .timing import TimingModel, TimingParams

MVIN_STATES = {isa.MVIN: 0, isa.MVIN2: 1, isa.MVIN3: 2}
MVIN_NAMES = ("mvin", "mvin2", "mvin3")


@dataclass
class Preload:
    bd: isa.LocalAddr
    bd_cols: int
    bd_rows: int
    c: isa.LocalAddr
    c_cols: int
    c_rows: int


class Gemmini(GemminiBase):
    def __init__(
        self,
        cfg: ArrayConfig,
        mem: Memory,
        timing: TimingModel | None = None,
        delay_stores: bool = True,
    ) -> None:
        self.cfg = cfg
        # False: mvout results reach memory at once (the behaviour of a purely functional
        # simulator, used when the program cannot tell the model about its fences).
        self.delay_stores = delay_stores
        self.mem = mem
        self.dim = cfg.pe_dim
        self.spad_rows, self.acc_rows = cfg.spad_rows, cfg.acc_rows
        self.max_cols = {
            False: self.dim * cfg.max_block_len,
            True: self.dim * cfg.max_block_len_acc,
        }
        self.is_float = cfg.dtype == "fp32"
        self.elem_dtype = np.dtype(np.float32 if self.is_float else np.int8)
        self.acc_dtype = np.dtype(np.float32 if self.is_float else np.int32)
        self.wide_dtype = np.dtype(np.float32 if self.is_float else np.float64)
        self.spad = np.zeros((self.spad_rows, self.dim), self.elem_dtype)
        self.acc = np.zeros((self.acc_rows, self.dim), self.acc_dtype)
        self.timing = timing or TimingModel(
            TimingParams(), self.spad_rows, self.acc_rows, getattr(cfg, "spad_banks", 4)
        )
        self.spad_used = np.zeros(self.spad_rows, bool)
        self.acc_used = np.zeros(self.acc_rows, bool)
        self.counters = Counters()
        # execute configuration
        self.dataflow = isa.WEIGHT_STATIONARY
        self.sys_act = 0
        self.sys_shift = 0
        self.a_transpose = False
        self.b_transpose = False
        self.a_stride = 1
        self.c_stride = 1
        self.ld = [LoadConfig() for _ in range(3)]
        self.st = StoreConfig()
        self.preload: Preload | None = None
        self.weights = np.zeros((self.dim, self.dim), self.wide_dtype)
        self.os_state = np.zeros((self.dim, self.dim), np.float32 if self.is_float else np.int64)
        self.loop_ws_regs: dict[int, tuple[int, int]] = {}
        self.loop_conv_regs: dict[int, tuple[int, int]] = {}
        self.pending_writes: list[tuple[float, int, bytes]] = []  # (lands at, addr, data)
        self._commands = {
            isa.CONFIG: self.config,
            isa.MVOUT: self._mvout,
            isa.PRELOAD: self._preload,
            isa.COMPUTE_PRELOADED: self._compute_preloaded,
            isa.COMPUTE_ACCUMULATED: self._compute_accumulated,
            isa.FLUSH: self._flush,
        }
        for funct, state in MVIN_STATES.items():
            self._commands[funct] = lambda rs1, rs2, state=state: self.mvin(
                rs1, rs2, state, self.timing.issue("load")
            )

    # ------------------------------------------------------------------ dispatch
    def _execute(self, funct: int, rs1: int, rs2: int) -> None:
        if self.pending_writes:
            self.land_writes(self.timing.cpu_now())
        command = self._commands.get(funct)
        if command is None:
            self._execute_other(funct, rs1, rs2)
        else:
            command(rs1, rs2)
        if not self.delay_stores:
            self.land_writes(float("inf"))

    def _mvout(self, rs1: int, rs2: int) -> None:
        self.mvout(rs1, rs2, self.timing.issue("store"))

    def _preload(self, rs1: int, rs2: int) -> None:
        self.do_preload(rs1, rs2, self.timing.issue("ex"))

    def _compute_preloaded(self, rs1: int, rs2: int) -> None:
        self.compute(rs1, rs2, True, self.timing.issue("ex"))

    def _compute_accumulated(self, rs1: int, rs2: int) -> None:
        self.compute(rs1, rs2, False, self.timing.issue("ex"))

    def _flush(self, rs1: int, rs2: int) -> None:
        t = self.timing.issue("ex")
        self.counters.count("flush")
        self.preload = None
        self.timing.run("ex", t, self.timing.p.flush_dims * self.dim, 0)

    def _fence(self) -> None:
        self.timing.fence()
        self.land_writes(float("inf"))

    def land_writes(self, now: float) -> None:
        if not self.pending_writes:
            return
        keep = []
        for lands, addr, data in self.pending_writes:
            if lands <= now:
                self.mem.write(addr, data)
            else:
                keep.append((lands, addr, data))
        self.pending_writes = keep

    # ------------------------------------------------------------------ helpers
    def _spad_range(self, addr: isa.LocalAddr, rows: int, what: str, stride: int = 1) -> None:
        limit = self.acc_rows if addr.is_acc else self.spad_rows
        last = addr.row + (rows - 1) * stride if rows else addr.row
        if rows and last >= limit:
            space = "accumulator" if addr.is_acc else "scratchpad"
            raise GemminiError(f"{what} touches {space} row {last}, past the end ({limit} rows)")

    def _space(self, addr: isa.LocalAddr) -> str:
        return "acc" if addr.is_acc else "spad"

    def read_local(self, addr: isa.LocalAddr, rows: int, cols: int, stride: int = 1) -> np.ndarray:
        """A (rows, cols) block of scratchpad (elem_t) or accumulator (acc_t) values, widened."""
        src = self.acc if addr.is_acc else self.spad
        if stride == 1:
            block = src[addr.row : addr.row + rows, :cols]
        else:
            block = src[addr.row + np.arange(rows) * stride, :cols]
        return block.astype(self.wide_dtype)

    def pad(self, block: np.ndarray) -> np.ndarray:
        if block.shape == (self.dim, self.dim):
            return block
        out = np.zeros((self.dim, self.dim), block.dtype)
        out[: block.shape[0], : block.shape[1]] = block
        return out

    # ------------------------------------------------------------------ config
    def config(self, rs1: int, rs2: int) -> None:
        kind = rs1 & 3
        self.counters.count("config")
        if kind == isa.CONFIG_EX:
            t = self.timing.issue("ex")
            if isa.bits(rs1, 7, 1):  # set_only_strides
                self.a_stride = isa.bits(rs1, 16, 16) or 1
                self.c_stride = isa.bits(rs2, 48, 16) or 1
            else:
                self.dataflow = isa.bits(rs1, 2, 1)
                self.sys_act = isa.bits(rs1, 3, 3)
                self.a_transpose = bool(isa.bits(rs1, 8, 1))
                self.b_transpose = bool(isa.bits(rs1, 9, 1))
                self.a_stride = isa.bits(rs1, 16, 16) or 1
                self.sys_shift = isa.bits(rs2, 0, 32)
                self.c_stride = isa.bits(rs2, 48, 16) or 1
                if self.sys_act > isa.RELU:
                    raise GemminiError(
                        f"config_ex activation {self.sys_act} is not modelled "
                        "(only NO_ACTIVATION=0 and RELU=1)"
                    )
            self.timing.run("ex", t, self.timing.p.config, 0)
        elif kind == isa.CONFIG_LD:
            t = self.timing.issue("load")
            state = isa.bits(rs1, 3, 2)
            if state > 2:
                raise GemminiError(f"config_ld state id {state} is out of range (0..2)")
            self.ld[state] = LoadConfig(
                stride=rs2 & 0xFFFFFFFFFFFF,
                scale=f32_from_bits(isa.bits(rs1, 32, 32)),
                shrunk=bool(isa.bits(rs1, 2, 1)),
                block_stride=isa.bits(rs1, 16, 16),
            )
            self.timing.run("load", t, self.timing.p.config, 0)
        elif kind == isa.CONFIG_ST:
            t = self.timing.issue("store")
            act = isa.bits(rs1, 2, 2)
            if act > isa.RELU:
                raise GemminiError(
                    f"config_st activation {act} is not modelled (only NO_ACTIVATION and RELU)"
                )
            self.st = StoreConfig(
                stride=isa.bits(rs2, 0, 32),
                act=act,
                scale=f32_from_bits(isa.bits(rs2, 32, 32)),
                pool_stride=isa.bits(rs1, 4, 2),
            )
            self.timing.run("store", t, self.timing.p.config, 0)
        else:
            raise GemminiError("config kind 3 (im2col / norm configuration) is not modelled")

    # ------------------------------------------------------------------ data movement
    def mvin(self, dram: int, rs2: int, state: int, issued: float) -> float:
        addr, cols, rows = isa.operand(rs2)
        name = MVIN_NAMES[state]
        self.counters.count(name)
        if addr.garbage or rows == 0 or cols == 0:
            return issued
        cfg = self.ld[state]
        dim = self.dim
        if rows > dim:
            raise GemminiError(f"{name} of {rows} rows: at most DIM={dim} rows per mvin")
        to_acc = addr.is_acc
        max_cols = self.max_cols[to_acc]
        if cols > max_cols:
            raise GemminiError(
                f"{name} of {cols} columns to the {'accumulator' if to_acc else 'scratchpad'}: "
                f"at most {max_cols}"
            )
        blocks = -(-cols // dim)
        block_stride = cfg.block_stride or dim
        for b in range(blocks):
            self._spad_range(isa.LocalAddr(addr.raw + b * block_stride) if b else addr, rows, name)
        src_acc = to_acc and not cfg.shrunk
        src_dtype = self.acc_dtype if src_acc else self.elem_dtype
        row_bytes = cols * src_dtype.itemsize
        if dram == 0:
            # DRAM address 0 means "fill with zeros": Gemmini's load controller sends no memory
            # request (LoadController.scala: all_zeros = vaddr === 0) and its ZeroWriter writes
            # the rows. Nothing is read, so no address is reached through it.
            raw = np.zeros((rows, row_bytes), np.uint8)
            occ, lat = self.timing.zero_fill_cost(rows, blocks)
        else:
            raw = read_rows(self.mem, dram, rows, row_bytes, cfg.stride)
            self.counters.bytes_in += rows * row_bytes
            occ, lat = self.timing.dma_cost(rows, row_bytes)
        data = raw.view(src_dtype).reshape(rows, cols)
        target = self.acc if to_acc else self.spad
        used = self.acc_used if to_acc else self.spad_used
        plain = cfg.scale == 1.0 and not (to_acc and addr.accumulate) and data.dtype == target.dtype
        if not plain:
            data = self._mvin_values(data, cfg.scale, to_acc)
        writes = []
        for b in range(blocks):
            row0 = addr.row + b * block_stride
            part = data[:, b * dim : (b + 1) * dim]
            width = part.shape[1]
            dest = target[row0 : row0 + rows]
            if plain:
                dest[:, :width] = part
            elif to_acc and addr.accumulate:
                summed = dest[:, :width].astype(part.dtype) + part
                dest[:, :width] = summed.astype(np.float32) if self.is_float else wrap_int32(summed)
            elif to_acc:
                dest[:, :width] = part.astype(np.float32) if self.is_float else wrap_int32(part)
            else:
                dest[:, :width] = part.astype(np.float32) if self.is_float else to_elem_int(part)
            if width < dim:
                dest[:, width:] = 0
            used[row0 : row0 + rows] = True
            writes.append((self._space(addr), row0, rows))
        return self.timing.run("load", issued, occ, lat, writes=tuple(writes))

    def _mvin_values(self, data: np.ndarray, scale: float, to_acc: bool) -> np.ndarray:
        """Widened mvin data with the load scale applied (rounded and saturated for integers)."""
        if self.is_float:
            vals = data.astype(np.float32)
            return (vals * np.float32(scale)).astype(np.float32) if scale != 1.0 else vals
        vals = data.astype(np.int64)
        if scale != 1.0:
            lo, hi = (INT32_MIN, INT32_MAX) if to_acc else (-128, 127)
            vals = scale_int(vals, scale, lo, hi)
        return vals

    def mvout(self, dram: int, rs2: int, issued: float) -> float:
        addr, cols, rows = isa.operand(rs2)
        self.counters.count("mvout")
        if addr.garbage or rows == 0 or cols == 0:
            return issued
        if self.st.pool_stride:
            raise GemminiError("mvout with pooling (config_st pool_stride != 0) is not modelled")
        dim = self.dim
        if rows > dim or cols > dim:
            raise GemminiError(f"mvout of {rows}x{cols}: at most DIM={dim} rows and columns")
        self._spad_range(addr, rows, "mvout")
        block = (self.acc if addr.is_acc else self.spad)[
            addr.row : addr.row + rows, :cols
        ]  # acc_t / elem_t
        if addr.is_acc and addr.full:
            out = block
        elif addr.is_acc:
            if self.is_float:
                out = activate(block * np.float32(self.st.scale), self.st.act).astype(np.float32)
            else:
                vals = scale_int(block, self.st.scale, INT32_MIN, INT32_MAX)
                out = to_elem_int(activate(vals, self.st.act))
        else:
            out = block
        data = np.ascontiguousarray(out).view(np.uint8).reshape(rows, -1)
        row_bytes = data.shape[1]
        stride = self.st.stride or row_bytes
        self.counters.bytes_out += rows * row_bytes
        occ, lat = self.timing.dma_cost(rows, row_bytes)
        if addr.is_acc:
            lat += self.timing.p.acc_read_latency
        done = self.timing.run(
            "store", issued, occ, lat, reads=((self._space(addr), addr.row, rows),)
        )
        if stride == row_bytes:
            self.pending_writes.append((done, dram, data.tobytes()))
        else:
            for r in range(rows):
                self.pending_writes.append((done, dram + r * stride, data[r].tobytes()))
        return done

    # ------------------------------------------------------------------ execute
    def do_preload(self, rs1: int, rs2: int, issued: float) -> float:
        bd, bd_cols, bd_rows = isa.operand(rs1)
        c, c_cols, c_rows = isa.operand(rs2)
        self.counters.count("preload")
        if bd_rows > self.dim or bd_cols > self.dim or c_rows > self.dim or c_cols > self.dim:
            raise GemminiError(
                f"preload of {bd_rows}x{bd_cols} / output {c_rows}x{c_cols}: at most DIM={self.dim}"
            )
        if not bd.garbage:
            self._spad_range(bd, bd_rows, "preload")
        if not c.garbage:
            self._spad_range(c, c_rows, "preload output", self.c_stride)
        self.preload = Preload(bd, bd_cols, bd_rows, c, c_cols, c_rows)
        reads = () if bd.garbage else ((self._space(bd), bd.row, bd_rows),)
        # the controller feeds all DIM rows of the weight block, zero-padded past bd_rows
        tm, reuse = self.timing, bd.garbage
        return tm.run_preload(
            issued,
            tm.preload_cost(self.dim, reuse),
            tm.preload_overlapped(self.dim, reuse),
            reads=reads,
        )

    def compute(self, rs1: int, rs2: int, preloaded: bool, issued: float) -> float:
        a, a_cols, a_rows = isa.operand(rs1)
        bd, bd_cols, bd_rows = isa.operand(rs2)
        name = "compute_preloaded" if preloaded else "compute_accumulated"
        self.counters.count(name)
        pre = self.preload
        if pre is None:
            raise GemminiError(
                f"{name} without a preceding preload (each compute consumes one preload)"
            )
        self.preload = None
        dim = self.dim
        if a_rows > dim or a_cols > dim or bd_rows > dim or bd_cols > dim:
            raise GemminiError(
                f"{name} operands {a_rows}x{a_cols} / {bd_rows}x{bd_cols}: at most DIM={dim}"
            )
        if a.garbage:
            A = np.zeros((dim, dim), self.wide_dtype)
        else:
            if a.is_acc:
                raise GemminiError(
                    f"{name} reads A from the accumulator; A must be in the scratchpad"
                )
            self._spad_range(a, a_rows, name + " A", self.a_stride)
            A = self.pad(self.read_local(a, a_rows, a_cols, self.a_stride))
        if self.a_transpose:
            A = A.T
        BD = None if bd.garbage else self.pad(self._check_read(bd, bd_rows, bd_cols, name))
        reads = [] if a.garbage else [("spad", a.row, (a_rows - 1) * self.a_stride + 1)]
        if not bd.garbage:
            reads.append((self._space(bd), bd.row, bd_rows))

        if self.dataflow == isa.WEIGHT_STATIONARY:
            if preloaded:
                if pre.bd.garbage:
                    W = np.zeros((dim, dim), A.dtype)
                else:
                    W = self.pad(self.read_local(pre.bd, pre.bd_rows, pre.bd_cols))
                self.weights = W.T if self.b_transpose else W
            result = A @ self.weights
            if BD is not None:
                result = result + BD
            self.counters.macs += a_rows * dim * dim
        else:  # output stationary: BD is B; preload gave D
            B = BD if BD is not None else np.zeros((dim, dim), A.dtype)
            if self.b_transpose:
                B = B.T
            if preloaded:
                D = (
                    np.zeros((dim, dim), A.dtype)
                    if pre.bd.garbage
                    else self.pad(self.read_local(pre.bd, pre.bd_rows, pre.bd_cols))
                )
                self.os_state = D.astype(self.os_state.dtype)
            self.os_state = self.os_state + (A @ B).astype(self.os_state.dtype)
            if not self.is_float:
                self.os_state = wrap_int32(self.os_state).astype(np.int64)
            result = self.os_state
            self.counters.macs += dim * dim * dim

        writes = []
        if not pre.c.garbage:
            out = result[: pre.c_rows, : pre.c_cols]
            self._write_output(pre.c, out)
            writes.append((self._space(pre.c), pre.c.row, (pre.c_rows - 1) * self.c_stride + 1))
        occ, lat = self.timing.compute_cost(max(a_rows, 1), dim)
        return self.timing.run_compute(issued, occ, lat, reads=tuple(reads), writes=tuple(writes))

    def _check_read(self, addr: isa.LocalAddr, rows: int, cols: int, what: str) -> np.ndarray:
        self._spad_range(addr, rows, what)
        return self.read_local(addr, rows, cols)

    def _write_output(self, c: isa.LocalAddr, out: np.ndarray) -> None:
        rows, cols = out.shape
        idx = (
            slice(c.row, c.row + rows)
            if self.c_stride == 1
            else c.row + np.arange(rows) * self.c_stride
        )
        if c.is_acc:
            if c.accumulate:
                out = self.acc[idx, :cols].astype(out.dtype) + out
            self.acc[idx, :cols] = out.astype(np.float32) if self.is_float else wrap_int32(out)
            self.acc_used[idx] = True
        else:
            vals = out
            if not self.is_float:
                if self.dataflow == isa.OUTPUT_STATIONARY:
                    vals = rounding_shift(vals, self.sys_shift)
                vals = to_elem_int(activate(vals, self.sys_act))
            else:
                vals = activate(vals, self.sys_act).astype(np.float32)
            self.spad[idx, :cols] = vals
            self.spad_used[idx] = True

    def rows_used(self) -> tuple[int, int]:
        return int(self.spad_used.sum()), int(self.acc_used.sum())
