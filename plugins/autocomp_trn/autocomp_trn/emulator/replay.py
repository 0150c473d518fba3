"""The trusted side: replay an untrusted instruction trace, enforcing the compiler's and the
hardware's rules, computing the outputs from the inputs and costing the schedule.

The trace is data, never code: JSON lists that this module validates field by field. A trace
that is malformed, refers to tensors it never allocated, reads outside a tensor or breaks a rule
is refused with the rule's name. The outputs the harness checks are the ones computed here, from
inputs the tracing process never saw, so a trace that was edited, shortened or forged (or a
kernel that computed on the host) cannot produce them. The latency comes from the same replay.

Numerics (nki.md section 4): tensors are stored in their dtype (bf16/fp8 via ml_dtypes, so every
write rounds), every engine computes in fp32, matmuls accumulate in fp32 PSUM. Fresh SBUF/PSUM
and output HBM allocations hold NaN sentinels, so reading memory nothing wrote shows up as a
wrong answer. Several seeds run at once: every array has a leading seed axis.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import dtypes, hardware as hw
from .cost import ENGINE_OF, CostReport, Regions, Scheduler
from .hardware import Generation
from .indexing import NkiError
from .vectorize import Lane, vectorized_loops

INT_SENTINEL = 4  # what the official simulator puts in fresh integer allocations


class TraceRefused(NkiError):
    """The trace broke a rule; the message names it (and the kernel line when known)."""


def _fail(message: str, code: str, line: int = 0):
    raise TraceRefused(message, code, line)


@dataclass
class TensorState:
    tid: int
    shape: tuple[int, ...]
    dtype: str
    buffer: str
    par_axis: int
    name: str
    path: tuple
    size: int
    itemsize: int
    line: int
    data: np.ndarray | None = None
    is_input: bool = False
    writes: int = 0
    regions: Regions | None = None
    # on-chip geometry: partitions per block, free elements per partition
    parts: int = 0
    free: int = 0
    written: np.ndarray | None = None  # for v2 auto-accumulating matmuls

    @property
    def label(self) -> str:
        return self.name or f"{self.buffer} tensor {list(self.shape)}"


@dataclass
class Frame:
    kind: str
    n: int
    line: int
    fid: int
    depth: int
    it: int = -1
    owners: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass
class ReplayResult:
    outputs: list[
        np.ndarray
    ]  # (seeds, *shape) each, in the kernel's output dtype; empty in trace-only mode
    cost: CostReport
    events: int
    cost_s: float = 0.0  # of the replay's time, what the cost model took


ALU = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "equal": lambda a, b: (a == b).astype(np.float32),
    "not_equal": lambda a, b: (a != b).astype(np.float32),
    "greater": lambda a, b: (a > b).astype(np.float32),
    "greater_equal": lambda a, b: (a >= b).astype(np.float32),
    "less": lambda a, b: (a < b).astype(np.float32),
    "less_equal": lambda a, b: (a <= b).astype(np.float32),
    "bitwise_and": lambda a, b: (a.astype(np.int64) & b.astype(np.int64)).astype(np.float32),
    "bitwise_or": lambda a, b: (a.astype(np.int64) | b.astype(np.int64)).astype(np.float32),
    "bitwise_xor": lambda a, b: (a.astype(np.int64) ^ b.astype(np.int64)).astype(np.float32),
}
REDUCE = {"add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod, "mean": np.mean}
#: what an activation does to ScalarE's per-partition reduce registers (nisa.reduce_cmd)
REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce")
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor"}


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float32])(x)


ACT = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "square": np.square,
    "abs": np.abs,
    "reciprocal": lambda x: 1.0 / x,
    "sin": np.sin,
    "cos": np.cos,
    "softplus": lambda x: np.logaddexp(0, x),
    "erf": _erf,
    "copy": lambda x: x,
    "negative": np.negative,
}
# VectorE cycles per element for each instruction kind (nki.md 5.1)
DVE_K = {
    "tensor_tensor": 2.0,
    "tensor_scalar": 1.0,
    "tensor_reduce": 1.0,
    "tensor_copy": 1.0,
    "memset": 1.0,
    "select": 2.0,
    "scan": 2.0,
    "reciprocal": 8.0,
    "transpose": 1.0,
    "partition_reduce": 1.0,
    "iota": 1.0,
    "affine_select": 1.0,
}
POOL_FIXED = {"iota": 150, "affine_select": 150}


def _as_int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what} is not an integer")
    return x


class Replayer:
    """Replays one trace. ``inputs`` maps input order -> array (seeds, *shape); None: trace only."""

    def __init__(
        self,
        trace: dict,
        gen: Generation,
        input_specs: list[tuple[tuple[int, ...], str]],
        inputs: list[np.ndarray] | None,
        output_specs: list[tuple[tuple[int, ...], str]] | None = None,
        seeds: int = 1,
        max_events: int = 3_000_000,
    ) -> None:
        self.trace, self.gen = trace, gen
        self.input_specs, self.inputs, self.output_specs = input_specs, inputs, output_specs
        self.numeric = inputs is not None
        self.seeds = seeds
        self.max_events = max_events
        self.tensors: dict[int, TensorState] = {}
        self.frames: list[Frame] = []
        self.next_fid = 0
        self.sched = Scheduler(gen)
        self.line = 0
        self.live_bytes = {"sbuf": 0, "psum": 0, "hbm": 0}
        self.cost_s = 0.0
        self.index = 0  # of the event being replayed
        self.fusions = Fusions()
        self.fused_end: dict[int, float] = {}  # fused activation event -> when it ends
        self.lanes: dict[int, Lane] = {}  # instructions of vectorized loops (vectorize.py)
        # (loop, position) -> the fused instruction's elements and operands so far
        self.vector_pending: dict[tuple[int, int], tuple[float, list, list]] = {}
        # ScalarE's 128 reduce registers, one per partition (per seed); NaN until an activation
        # resets them, so a kernel reading them first computes NaN as from unwritten memory
        self.act_regs = np.full((seeds, hw.PMAX), np.nan, dtype=np.float32)

    # ================================================================== driver
    def run(self) -> ReplayResult:
        try:
            events, in_ids, out_ids = self._header()
            last_use = self._last_uses(events)
            self.fusions = compiler_fusions(events)
            vector = vectorized_loops(events, self.fusions.taken(), self.gen.vector_fmax)
            self.lanes = vector.lanes
            self.sched.report.long_loops = vector.long_loops
            self.sched.report.long_loop_instructions = vector.long_instructions
            for index, event in enumerate(events):
                self.index = index
                self._event(event)
                for tid in last_use.get(index, ()):
                    self._release(tid, out_ids)
            if self.frames:
                _fail("malformed trace: a loop never ended", "err_trace_tampered")
            self._spills()
            outputs = self._outputs(in_ids, out_ids)
        except TraceRefused:
            raise
        # whatever a malformed trace makes the replay raise is the trace's fault, not ours
        except (
            TypeError,
            ValueError,
            KeyError,
            IndexError,
            AttributeError,
            ArithmeticError,
            RecursionError,
        ) as exc:
            _fail(f"malformed trace: {exc}", "err_trace_tampered", self.line)
        return ReplayResult(outputs, self.sched.finish(), len(events), self.cost_s)

    def _header(self):
        t = self.trace
        if not isinstance(t, dict) or t.get("version") != 1:
            _fail("malformed trace: unknown version", "err_trace_tampered")
        events, ins, outs = t.get("events"), t.get("inputs"), t.get("outputs")
        if not isinstance(events, list) or not isinstance(ins, list) or not isinstance(outs, list):
            _fail("malformed trace: missing events, inputs or outputs", "err_trace_tampered")
        if len(events) > self.max_events:
            _fail(
                f"the trace has {len(events)} events, over the limit of {self.max_events}",
                "err_trace_too_long",
            )
        if len(ins) != len(self.input_specs):
            _fail(
                f"the kernel was traced with {len(ins)} inputs, the problem has {len(self.input_specs)}",
                "err_trace_tampered",
            )
        ins = [_as_int(i, "input id") for i in ins]
        if ins != list(range(len(ins))):
            _fail("malformed trace: the inputs must be the first tensors", "err_trace_tampered")
        return events, ins, [_as_int(i, "output id") for i in outs]

    def _last_uses(self, events: list) -> dict[int, list[int]]:
        last: dict[int, int] = {}
        for index, e in enumerate(events):
            if isinstance(e, list) and len(e) > 1 and e[0] == "alloc":
                last[e[1]] = index  # a tensor nothing uses is free again at once
            elif isinstance(e, list) and e and e[0] == "op" and len(e) >= 4:
                for ap in (*e[2], *e[3]):
                    if isinstance(ap, list) and ap:
                        last[ap[0]] = index
        out: dict[int, list[int]] = {}
        for tid, index in last.items():
            out.setdefault(index, []).append(tid)
        return out

    def _release(self, tid, out_ids) -> None:
        t = self.tensors.get(tid)
        if t is None or t.is_input or tid in out_ids:
            return
        t.data = None
        self.live_bytes[t.buffer] -= self._pbytes(t) if t.buffer != "hbm" else t.size * t.itemsize

    # ================================================================== events
    def _event(self, e) -> None:
        if not isinstance(e, list) or not e:
            raise ValueError("an event is not a list")
        kind = e[0]
        if kind == "op":
            _, name, dsts, srcs, attrs, line = e
            self.line = _as_int(line, "line")
            if (
                not isinstance(attrs, dict)
                or not isinstance(dsts, list)
                or not isinstance(srcs, list)
            ):
                raise TypeError("op fields")
            handler = getattr(self, "_op_" + str(name), None)
            if handler is None:
                _fail(f"unknown instruction {name!r}", "err_trace_tampered", self.line)
            dst_aps = [self._ap(a, write=True) for a in dsts]
            src_aps = [self._ap(a) for a in srcs]
            self._loop_checks(dst_aps, src_aps, bool(attrs.get("acc")))
            handler(dst_aps, src_aps, attrs)
            for ap in dst_aps:
                ap.t.writes += 1
        elif kind == "alloc":
            self._alloc(e)
        elif kind == "loop":
            _, loop_kind, n, line = e
            if loop_kind not in ("affine", "sequential", "static"):
                raise ValueError("loop kind")
            self.frames.append(
                Frame(
                    loop_kind,
                    _as_int(n, "trip count"),
                    _as_int(line, "line"),
                    self.next_fid,
                    len(self.frames),
                )
            )
            self.next_fid += 1
        elif kind == "iter":
            f = self.frames[-1]
            i = _as_int(e[1], "iteration")
            if i != f.it + 1 or i >= f.n:
                raise ValueError("iterations out of order")
            f.it = i
        elif kind == "end":
            f = self.frames.pop()
            if f.it != f.n - 1:
                _fail(
                    "malformed trace: a loop ended before its last iteration", "err_trace_tampered"
                )
        else:
            raise ValueError(f"unknown event {kind!r}")

    def _path(self) -> tuple:
        return tuple((f.fid, f.it) for f in self.frames)

    def _alloc(self, e) -> None:
        _, tid, shape, dtype, buffer, par_axis, line = e
        tid = _as_int(tid, "tensor id")
        self.line = _as_int(line, "line")
        if tid in self.tensors:
            raise ValueError("tensor allocated twice")
        shape = tuple(_as_int(n, "dimension") for n in shape)
        if not shape or any(n <= 0 for n in shape):
            raise ValueError("bad shape")
        if dtype not in dtypes.DTYPES or buffer not in ("hbm", "sbuf", "psum"):
            raise ValueError("bad dtype or buffer")
        size = math.prod(shape)
        t = TensorState(
            tid,
            shape,
            dtype,
            buffer,
            _as_int(par_axis, "par axis"),
            "",
            self._path(),
            size,
            dtypes.itemsize(dtype),
            self.line,
        )
        if buffer == "hbm":
            if self.frames:
                _fail(
                    "HBM tensors (kernel outputs) must be created at the kernel's top level, not inside a loop",
                    "err_shared_hbm_must_in_kernel_level",
                    self.line,
                )
            c = shape[-1]
            t.regions = Regions(size // c, c)
            self.live_bytes["hbm"] += size * t.itemsize
            if self.live_bytes["hbm"] > self.gen.hbm_bytes:
                _fail(
                    f"HBM tensors of {self.live_bytes['hbm'] / 2**30:.1f} GiB at once (this one "
                    f"{list(shape)} {dtype}) exceed the {self.gen.hbm_bytes >> 30} GiB of HBM on "
                    f"{self.gen.name}",
                    "err_hbm_capacity",
                    self.line,
                )
        else:
            if not 0 <= t.par_axis < len(shape):
                raise ValueError("bad partition axis")
            parts = shape[t.par_axis]
            if len(shape) < 2 or t.par_axis == len(shape) - 1:
                _fail(
                    f"on-chip tile of shape {list(shape)} needs a partition dim and at least one free dim",
                    "err_insufficient_rank",
                    self.line,
                )
            if parts > hw.PMAX:
                _fail(
                    f"Size of partition dimension {parts} exceeds architecture limitation of {hw.PMAX}",
                    "err_num_partition_exceed_arch_limit",
                    self.line,
                )
            t.parts, t.free = parts, math.prod(shape[t.par_axis + 1 :])
            pbytes = t.free * t.itemsize
            cap = (
                self.gen.sbuf_bytes_per_partition
                if buffer == "sbuf"
                else self.gen.psum_bytes_per_partition
            )
            if pbytes > cap:
                where = "SBUF" if buffer == "sbuf" else "PSUM"
                _fail(
                    f"a {where} tile of {pbytes} bytes per partition ({list(shape)} {dtype}) exceeds the "
                    f"{cap // 1024} KiB per partition of {where} on {self.gen.name}",
                    "err_out_of_memory",
                    self.line,
                )
            blocks = size // (parts * t.free)
            t.regions = Regions(blocks * parts, t.free)
            self.live_bytes[buffer] += self._pbytes(t)
            rep = self.sched.report
            rep.peak_sbuf_bytes = max(rep.peak_sbuf_bytes, self.live_bytes["sbuf"])
            rep.peak_psum_bytes = max(rep.peak_psum_bytes, self.live_bytes["psum"])
        if len(self.tensors) < len(self.input_specs):  # the first allocations are the kernel inputs
            spec_shape, spec_dtype = self.input_specs[len(self.tensors)]
            if buffer != "hbm" or shape != tuple(spec_shape) or dtype != spec_dtype:
                _fail(
                    "malformed trace: the kernel inputs do not match the problem",
                    "err_trace_tampered",
                )
            t.is_input = True
            if self.numeric:
                t.data = np.ascontiguousarray(self.inputs[tid].reshape(self.seeds, size))
        elif self.numeric:
            np_dtype = dtypes.DTYPES[dtype]
            fill = np.nan if dtype in dtypes.FLOATS else INT_SENTINEL
            t.data = np.full((self.seeds, size), fill, dtype=np_dtype)
        self.tensors[tid] = t

    def _pbytes(self, t: TensorState) -> int:
        b = (t.size // t.parts) * t.itemsize if t.parts else 0
        if t.buffer == "psum":
            b = math.ceil(b / hw.PSUM_BANK_BYTES) * hw.PSUM_BANK_BYTES
        return b

    # ================================================================== access patterns
    def _ap(self, raw, write: bool = False) -> AP:
        tid, offset, dims = raw
        t = self.tensors.get(_as_int(tid, "tensor id"))
        if t is None:
            _fail(
                "malformed trace: an instruction uses a tensor that was never allocated",
                "err_trace_tampered",
                self.line,
            )
        offset = _as_int(offset, "offset")
        dims = [(_as_int(n, "size"), _as_int(s, "stride")) for n, s in dims]
        if not dims or offset < 0 or any(n <= 0 or s < 0 for n, s in dims):
            raise ValueError("bad access pattern")
        hi = offset + sum((n - 1) * s for n, s in dims)
        if hi >= t.size:
            _fail(f"access out of bounds of {t.label}", "err_tensor_access_out_of_bound", self.line)
        path = self._path()
        if path[: len(t.path)] != t.path:
            _fail(
                f"{t.label} (created at line {t.line}) is used outside the loop body that created it",
                "err_local_variable_used_out_of_scope",
                self.line,
            )
        if write:
            if t.is_input:
                _fail(
                    "kernel inputs are immutable: write results to a new tensor",
                    "err_cannot_update_immutable_parameter",
                    self.line,
                )
            if not _injective(dims):
                _fail(
                    "an instruction writes through an overlapping or broadcast access pattern",
                    "err_unsupported_index_expression",
                    self.line,
                )
        return AP(t, offset, dims, hi)

    # ================================================================== affine_range dependencies
    def _loop_checks(self, dsts: list[AP], srcs: list[AP], acc: bool) -> None:
        if not self.frames:
            return
        for f in self.frames:
            if f.kind != "affine":
                continue
            mark = f.it + 1
            for ap in srcs:
                if acc and any(ap.same(d) for d in dsts):
                    continue
                owner = f.owners.get(ap.t.tid)
                if owner is None or len(ap.t.path) > f.depth:
                    continue
                seen = ap.view_of(owner)
                if ((seen != 0) & (seen != mark) & (seen != -mark)).any():
                    _fail(
                        f"affine_range loop (line {f.line}) iteration {f.it} reads {ap.t.label} data written by "
                        "another iteration: affine_range iterations must be independent except for += "
                        "accumulation; use nl.sequential_range for a loop-carried dependency",
                        "err_loop_carried_dependency",
                        self.line,
                    )
            for i, ap in enumerate(dsts):
                if len(ap.t.path) > f.depth:
                    continue  # created inside this iteration
                owner = f.owners.get(ap.t.tid)
                if owner is None:
                    owner = f.owners[ap.t.tid] = np.zeros(ap.t.size, dtype=np.int32)
                seen = ap.view_of(owner)
                if acc and i == 0:
                    if ((seen > 0) & (seen != mark)).any():
                        _fail(
                            f"affine_range loop (line {f.line}) iteration {f.it} accumulates into {ap.t.label} "
                            "data that another iteration overwrote",
                            "err_loop_carried_dependency",
                            self.line,
                        )
                    seen[seen <= 0] = -mark
                else:
                    if ((seen != 0) & (seen != mark) & (seen != -mark)).any():
                        _fail(
                            f"affine_range loop (line {f.line}): different iterations write the same elements "
                            f"of {ap.t.label} (not a += accumulation); declare the buffer inside the loop or use "
                            "nl.sequential_range",
                            "err_unexpected_output_dependencies",
                            self.line,
                        )
                    seen[...] = mark

    # ================================================================== rules shared by instructions
    def _onchip(self, ap: AP, what: str, buffers=("sbuf", "psum")) -> None:
        if ap.t.buffer not in buffers:
            names = " or ".join(b.upper() for b in buffers)
            _fail(
                f"{what} must be in {names}, got {ap.t.buffer.upper()} ({ap.t.label})",
                "err_unsupported_memory",
                self.line,
            )
        t = ap.t
        n0, s0 = ap.dims[0]
        rel = ap.offset % (t.parts * t.free)
        p0, f0 = divmod(rel, t.free)
        if n0 > 1 and s0 != t.free:
            _fail(
                f"{what}: the first axis of a tile must be the partition dim of {t.label} (no partition "
                "striding; move other axes to free dims)",
                "err_failed_to_infer_tile_from_local_tensor",
                self.line,
            )
        free_hi = f0 + sum((n - 1) * s for n, s in ap.dims[1:])
        if free_hi >= t.free or p0 + n0 > t.parts:
            _fail(
                f"{what}: the access crosses partitions of {t.label}; the first axis must be the partition dim "
                "and the others free dims",
                "err_failed_to_infer_tile_from_local_tensor",
                self.line,
            )
        if n0 > hw.PMAX:
            _fail(
                f"Size of partition dimension {n0} exceeds architecture limitation of {hw.PMAX}",
                "err_num_partition_exceed_arch_limit",
                self.line,
            )

    def _same_parts(self, *aps: AP) -> None:
        ps = {ap.dims[0][0] for ap in aps}
        if len(ps) > 1:
            _fail(
                f"operands have different partition counts {sorted(ps)}",
                "err_num_partition_mismatch",
                self.line,
            )

    def _shape_eq(self, a: AP, b: AP, what: str) -> None:
        if a.shape != b.shape:
            _fail(
                f"{what}: shapes {list(a.shape)} and {list(b.shape)} differ",
                "err_num_partition_mismatch",
                self.line,
            )

    def _engine(self, attrs: dict, allowed: tuple[str, ...], default: str) -> str:
        e = ENGINE_OF.get(attrs.get("engine", ""), None) or default
        if e not in allowed:
            _fail(f"this instruction cannot run on {e}", "err_unsupported_engine", self.line)
        return e

    def _no_psum_on_pool(self, engine: str, *aps: AP) -> None:
        if engine == "pool" and any(ap.t.buffer == "psum" for ap in aps):
            _fail("GpSimd cannot access PSUM", "err_unsupported_memory", self.line)

    # ================================================================== cost helpers
    def _box(self, ap: AP):
        t = ap.t
        if t.buffer == "hbm":
            c = t.shape[-1]
            r0, r1 = ap.offset // c, ap.hi // c + 1
            c0 = ap.offset % c
            extent = sum((n - 1) * s for n, s in ap.dims if s % c)
            if all(s < c for n, s in ap.dims if s % c and n > 1) and c0 + extent < c:
                return t.regions, r0, r1, c0, c0 + extent + 1
            return t.regions, r0, r1, 0, c
        block_elems = t.parts * t.free
        b, rel = divmod(ap.offset, block_elems)
        p0, f0 = divmod(rel, t.free)
        n0 = ap.dims[0][0]
        extent = sum((n - 1) * s for n, s in ap.dims[1:])
        return t.regions, b * t.parts + p0, b * t.parts + p0 + n0, f0, f0 + extent + 1

    def _compute(
        self,
        engine: str,
        kind: str,
        elems: float,
        dsts,
        srcs,
        extra_cycles: int = 0,
        k: float | None = None,
    ) -> float:
        """Cost one instruction and schedule it; returns when it ends. ``k``: cycles per element
        where the instruction's own rate differs from its kind's (``DVE_K``). An iteration of a
        vectorized loop adds its work to the loop's fused instruction, which issues with the last
        iteration (until then this returns 0: nothing reads the end of such an instruction)."""
        t = time.perf_counter()
        reads, writes = [self._box(a) for a in srcs], [self._box(a) for a in dsts]
        lane = self.lanes.get(self.index)
        if lane is not None:
            key = (lane.group, lane.position)
            done, r, w = self.vector_pending.pop(key, (0.0, [], []))
            done, r, w = done + elems, r + reads, w + writes
            if not lane.last:
                self.vector_pending[key] = (done, r, w)
                self.cost_s += time.perf_counter() - t
                return 0.0
            elems, reads, writes = done, r, w
            rep = self.sched.report
            rep.vectorized_instructions += lane.trips
            rep.vectorized_loops += lane.position == 0
        cycles, exposed, floor = self._cycles(engine, kind, elems, dsts, srcs, extra_cycles, k)
        end = self.sched.compute(engine, cycles, reads, writes, kind, exposed)
        if floor:  # its cost is the engine's fixed floor, not its elements
            rep = self.sched.report
            rep.floor_ns[engine] = rep.floor_ns.get(engine, 0.0) + cycles / self.sched.clock[engine]
            rep.floor_instructions[engine] = rep.floor_instructions.get(engine, 0) + 1
        self.cost_s += time.perf_counter() - t
        return end

    def _not_issued(self, merge: str, engine: str, kind: str, elems: float, dsts, srcs, **kw):
        """Record the engine time an instruction the compiler merges away would have cost."""
        cycles, *_ = self._cycles(engine, kind, elems, dsts, srcs, kw.get("extra", 0), kw.get("k"))
        fused = self.sched.report.fused_ns
        fused[merge] = fused.get(merge, 0.0) + cycles / self.sched.clock[engine]

    def _cycles(
        self, engine: str, kind: str, elems: float, dsts, srcs, extra_cycles: int, k: float | None
    ) -> tuple[float, float, bool]:
        """An instruction's engine cycles; the cycles it adds when it reads what its engine's
        previous instruction wrote (a latency the pipeline hides behind independent work); and
        whether its elements take less than the engine's minimum initiation interval."""
        g = self.gen
        if engine == "pe":
            return elems, 0.0, False
        if k is None:
            k = DVE_K.get(kind, 1.0) if engine in ("dve", "pool") else 1.0
        # the operands' access latency overlaps the engine's previous instruction, unless
        # this one reads what that one wrote (back-to-back dependent)
        cycles = max(g.min_ii, k * elems) + extra_cycles
        exposed = max(g.min_ii, k * elems + g.access_cycles) - max(g.min_ii, k * elems)
        if engine == "act":
            cycles += g.act_fixed_cycles
        if any(ap.dims[-1][1] * ap.t.itemsize > 16 and ap.dims[-1][0] > 1 for ap in (*dsts, *srcs)):
            cycles += k * elems  # strided minor access runs at half bandwidth
        return cycles, exposed, k * elems < g.min_ii

    # ================================================================== data helpers
    def _read(self, ap: AP) -> np.ndarray:
        """The operand as fp32 (a view, not a copy, when it is stored as fp32: never written to)."""
        view = ap.view()
        return view if view.dtype == np.float32 else view.astype(np.float32)

    def _write(self, ap: AP, value: np.ndarray, acc: bool = False) -> None:
        view = ap.view()
        if ap.t.dtype not in dtypes.FLOATS:
            value = np.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0)
        with np.errstate(all="ignore"):
            if acc:
                view[...] = view.astype(np.float32) + value
            else:
                view[...] = value

    # ================================================================== instructions
    def _op_dma(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        if d.shape != s.shape:
            _fail(
                f"DMA source {list(s.shape)} and destination {list(d.shape)} shapes differ",
                "err_store_dst_shape_smaller_than_other_shape",
                self.line,
            )
        for ap, what in ((d, "DMA destination"), (s, "DMA source")):
            if ap.t.buffer == "psum":
                _fail(
                    f"{what} is in PSUM: DMA moves HBM and SBUF data only (copy PSUM to SBUF first)",
                    "err_unsupported_memory",
                    self.line,
                )
            if ap.t.buffer == "sbuf":
                self._onchip(ap, what, ("sbuf",))
        acc = bool(attrs.get("acc"))
        if self.numeric:
            self._write(d, self._read(s) if (acc or d.t.dtype != s.t.dtype) else s.view(), acc)
        self._dma_cost(d, s, "dma_transpose" if attrs.get("transpose") else "dma")

    def _dma_cost(self, d: AP, s: AP, kind: str) -> None:
        onchip = d if d.t.buffer == "sbuf" else s if s.t.buffer == "sbuf" else None
        elems = math.prod(d.shape)
        nbytes = elems * max(d.t.itemsize, s.t.itemsize)
        if onchip is not None:
            parts = onchip.dims[0][0]
            p0 = (onchip.offset % (onchip.t.parts * onchip.t.free)) // onchip.t.free
        else:
            parts, p0 = min(hw.PMAX, d.shape[0]), 0
        runs = max(_runs(d), _runs(s), parts)
        hbm_bytes = (elems * d.t.itemsize if d.t.buffer == "hbm" else 0) + (
            elems * s.t.itemsize if s.t.buffer == "hbm" else 0
        )
        if runs >= elems > parts:
            self.sched.report.strided_dmas += 1
        t = time.perf_counter()
        self.sched.dma(parts, p0, nbytes, runs, hbm_bytes, [self._box(s)], [self._box(d)], kind)
        self.cost_s += time.perf_counter() - t

    def _op_matmul(self, dsts, srcs, attrs) -> None:
        (d,), (st, mv) = dsts, srcs
        for ap, what in ((st, "matmul stationary"), (mv, "matmul moving")):
            if ap.t.buffer != "sbuf":
                _fail(
                    f"{what} is in {ap.t.buffer.upper()}: TensorE reads SBUF only",
                    "err_unsupported_memory",
                    self.line,
                )
            self._onchip(ap, what, ("sbuf",))
            if len(ap.dims) != 2:
                _fail(f"{what} must be a 2-D tile", "err_exceed_max_supported_dimension", self.line)
        if d.t.buffer != "psum":
            _fail(
                "matmul output must be in PSUM: TensorE writes PSUM only",
                "err_unsupported_memory",
                self.line,
            )
        self._onchip(d, "matmul output", ("psum",))
        (k1, m), (k2, n) = st.shape, mv.shape
        if k1 != k2:
            _fail(
                f"matmul contraction (partition) sizes differ: stationary {k1}, moving {k2}",
                "err_num_partition_mismatch",
                self.line,
            )
        if m > hw.GEMM_STATIONARY_FMAX:
            _fail(
                f"matmul stationary free size {m} exceeds gemm_stationary_fmax {hw.GEMM_STATIONARY_FMAX}",
                "err_size_of_dimension_exceed_arch_limit",
                self.line,
            )
        if n > hw.GEMM_MOVING_FMAX:
            _fail(
                f"matmul moving free size {n} exceeds gemm_moving_fmax {hw.GEMM_MOVING_FMAX} (one PSUM bank)",
                "err_size_of_dimension_exceed_arch_limit",
                self.line,
            )
        if d.shape != (m, n):
            _fail(
                f"matmul output tile {list(d.shape)} does not match [{m}, {n}]",
                "err_num_partition_mismatch",
                self.line,
            )
        if d.t.dtype != "float32":
            _fail(
                "matmul accumulates in fp32: the PSUM output must be float32",
                "err_unsupported_dtype",
                self.line,
            )
        self._psum_bank(d, "matmul output")
        low = {st.t.dtype in dtypes.LOW_PRECISION, mv.t.dtype in dtypes.LOW_PRECISION}
        if len(low) > 1:
            _fail(
                f"matmul operands mix fp32 with 8/16-bit types ({st.t.dtype}, {mv.t.dtype})",
                "err_unsupported_dtype",
                self.line,
            )
        acc = attrs.get("acc", False)
        if acc not in (True, False, "auto"):
            raise ValueError("acc")
        if self.numeric:
            r = np.matmul(self._read(st).transpose(0, 2, 1), self._read(mv))
            if acc == "auto":
                if d.t.written is None:
                    d.t.written = np.zeros(d.t.size, dtype=bool)
                seen = d.view_of(d.t.written)
                view = d.view()
                with np.errstate(all="ignore"):
                    view[...] = np.where(seen[None], view.astype(np.float32) + r, r)
                seen[...] = True
            else:
                self._write(d, r, bool(acc))
        fp32 = st.t.dtype not in dtypes.LOW_PRECISION
        factor = 4 if fp32 else 1
        if self._onezero_hint(attrs.get("onezero"), st, mv) and fp32:
            factor = 2
        self.sched.report.flops += 2.0 * k1 * m * n
        self._compute("pe", "matmul", max(self.gen.min_ii, n) * factor, [d], [st, mv])

    def _onezero_hint(self, hint, st: AP, mv: AP) -> bool:
        """Whether a matmul's 0/1 hint (``is_*_onezero``) may be priced: only when every hinted
        operand holds only 0 and 1 on every seed. A false hint is refused (the hardware would
        compute something else); unchecked (trace-only mode), it is priced as no hint."""
        if not hint:
            return False
        names = ["stationary", "moving"] if hint is True else hint
        if not isinstance(names, list) or not set(names) <= {"stationary", "moving"}:
            raise ValueError("onezero")
        if not self.numeric:
            return False
        for name in names:
            values = self._read(st if name == "stationary" else mv)
            if not np.all((values == 0) | (values == 1)):
                _fail(
                    f"is_{name}_onezero=True, but the {name} operand holds values other than "
                    "0 and 1: a false hint is refused",
                    "err_false_hint",
                    self.line,
                )
        return True

    def _psum_bank(self, d: AP, what: str) -> None:
        t = d.t
        rel = d.offset % (t.parts * t.free)
        f0 = rel % t.free
        lo = f0 * t.itemsize
        hi = (f0 + sum((n - 1) * s for n, s in d.dims[1:])) * t.itemsize + t.itemsize - 1
        block_bytes = t.free * t.itemsize
        if hi - lo + 1 > hw.PSUM_BANK_BYTES or (
            lo // hw.PSUM_BANK_BYTES != hi // hw.PSUM_BANK_BYTES
            and block_bytes > hw.PSUM_BANK_BYTES
        ):
            _fail(
                f"{what} spans {hi - lo + 1} bytes per partition: it must fit one 2 KiB PSUM bank "
                f"({hw.PSUM_FMAX} fp32)",
                "err_size_of_dimension_exceed_arch_limit",
                self.line,
            )

    def _op_transpose(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        engine = self._engine(attrs, ("pe", "dve"), "pe")
        if len(s.dims) != 2 or len(d.dims) != 2:
            _fail("transpose takes a 2-D tile", "err_exceed_max_supported_dimension", self.line)
        p, f = s.shape
        if d.shape != (f, p):
            _fail(
                f"transpose output {list(d.shape)} is not [{f}, {p}]",
                "err_num_partition_mismatch",
                self.line,
            )
        if engine == "pe":
            if s.t.buffer != "sbuf":
                _fail("TensorE transpose reads SBUF only", "err_unsupported_memory", self.line)
            if d.t.buffer != "psum":
                _fail("TensorE transpose writes PSUM only", "err_unsupported_memory", self.line)
            if p > 128 or f > 128:
                _fail(
                    f"TensorE transpose is limited to 128x128, got {p}x{f}",
                    "err_size_of_dimension_exceed_arch_limit",
                    self.line,
                )
            self._psum_bank(d, "transpose output")
        elif p > 32 or f > 32:
            _fail(
                f"VectorE transpose is limited to 32x32, got {p}x{f}",
                "err_size_of_dimension_exceed_arch_limit",
                self.line,
            )
        self._onchip(s, "transpose input")
        self._onchip(d, "transpose output")
        if self.numeric:
            self._write(d, self._read(s).transpose(0, 2, 1))
        fp32 = s.t.dtype not in dtypes.LOW_PRECISION
        if engine == "pe":
            self._compute("pe", "transpose", max(self.gen.min_ii, p) * (4 if fp32 else 1), [d], [s])
        else:
            self._compute("dve", "transpose", f, [d], [s])

    def _op_pbroadcast(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        if s.dims[0][0] != 1 or s.shape[1:] != d.shape[1:]:
            raise ValueError("pbroadcast shapes")
        self._onchip(s, "partition broadcast source", ("sbuf",))
        self._onchip(d, "partition broadcast output", ("psum",))
        self._psum_bank(d, "partition broadcast output")
        if self.numeric:
            self._write(d, np.broadcast_to(self._read(s), (self.seeds, *d.shape)))
        free = math.prod(d.shape[1:])
        self._compute("pe", "partition_broadcast", max(self.gen.min_ii, free), [d], [s])

    def _elementwise_checks(self, engine: str, dsts, srcs, what: str) -> None:
        for ap in dsts:
            self._onchip(ap, f"{what} output")
        for ap in srcs:
            self._onchip(ap, f"{what} input")
        self._no_psum_on_pool(engine, *dsts, *srcs)

    def _op_tensor_tensor(self, dsts, srcs, attrs) -> None:
        (d,), (a, b) = dsts, srcs
        engine = self._engine(attrs, ("dve", "pool"), "dve")
        op = attrs["op"]
        if op not in ALU:
            raise ValueError("op")
        self._elementwise_checks(engine, dsts, srcs, f"tensor_tensor {op}")
        self._shape_eq(a, b, "tensor_tensor operands")
        self._shape_eq(a, d, "tensor_tensor output")
        if a.t.buffer == "psum" and b.t.buffer == "psum" and not (attrs.get("acc") and a.same(d)):
            _fail(
                "tensor_tensor cannot read both inputs from PSUM (copy one to SBUF)",
                "err_unsupported_memory",
                self.line,
            )
        if op in BITWISE and any(ap.t.dtype in dtypes.FLOATS for ap in (a, b)):
            _fail(f"{op} needs integer operands", "err_unsupported_dtype", self.line)
        if self.numeric:
            with np.errstate(all="ignore"):
                self._write(d, ALU[op](self._read(a), self._read(b)))
        k = _tensor_tensor_k(op, a, b, d) if engine == "dve" else None
        self._compute(engine, "tensor_tensor", _free(d), dsts, srcs, k=k)

    def _scalar_operand(self, attrs: dict, key: str, srcs: list, k: int, data: AP):
        v = attrs.get(key)
        if v == "ap":
            ap = srcs[k]
            if ap.dims[0][0] != data.dims[0][0] or math.prod(ap.shape[1:]) != 1:
                _fail(
                    f"tensor_scalar {key} must be a scalar or a [P, 1] tile matching the data's partitions",
                    "err_num_partition_mismatch",
                    self.line,
                )
            self._onchip(ap, key)
            return (
                self._read(ap).reshape(self.seeds, ap.dims[0][0], *([1] * (len(data.dims) - 1)))
                if self.numeric
                else None
            ), k + 1
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(key)
        return np.float32(v), k

    def _op_tensor_scalar(self, dsts, srcs, attrs) -> None:
        (d,), data = dsts, srcs[0]
        engine = self._engine(attrs, ("dve", "act", "pool"), "dve")
        self._elementwise_checks(engine, dsts, srcs[:1], "tensor_scalar")
        self._shape_eq(data, d, "tensor_scalar output")
        op0, op1 = attrs["op0"], attrs.get("op1")
        if op0 not in ALU or (op1 is not None and op1 not in ALU):
            raise ValueError("op")
        if engine == "act" and self.gen.name == "trn2" and {op0, op1} - {"multiply", "add", None}:
            _fail(
                "ScalarE tensor_scalar on Trn2 supports multiply and add only",
                "err_unsupported_engine",
                self.line,
            )
        v0, k = self._scalar_operand(attrs, "operand0", srcs, 1, data)
        v1 = None
        if op1 is not None:
            v1, k = self._scalar_operand(attrs, "operand1", srcs, k, data)
        if k != len(srcs) and not (attrs.get("acc") and len(srcs) == 1):
            raise ValueError("operand count")
        if self.numeric:
            x = self._read(data)
            with np.errstate(all="ignore"):
                x = ALU[op0](v0, x) if attrs.get("reverse0") else ALU[op0](x, v0)
                if op1 is not None:
                    x = ALU[op1](v1, x) if attrs.get("reverse1") else ALU[op1](x, v1)
            self._write(d, x)
        self._compute(engine, "tensor_scalar", _free(d), dsts, srcs)

    def _op_activation(self, dsts, srcs, attrs) -> None:
        d, data = dsts[0], srcs[0]
        func = attrs["func"]
        if func not in ACT:
            raise ValueError("func")
        self._elementwise_checks("act", dsts[:1], srcs[:1], f"activation {func}")
        self._shape_eq(data, d, "activation output")
        k = 1
        bias = scale = None
        if attrs.get("bias") == "ap":
            ap = srcs[k]
            k += 1
            if (
                ap.dims[0][0] != data.dims[0][0]
                or math.prod(ap.shape[1:]) != 1
                or ap.t.dtype not in ("float32", "float16", "bfloat16")
            ):
                _fail(
                    "activation bias must be a [P, 1] fp32/fp16/bf16 vector",
                    "err_activation_bias_invalid_type",
                    self.line,
                )
            self._onchip(ap, "activation bias")
            bias = ap
        if attrs.get("scale") == "ap":
            ap = srcs[k]
            k += 1
            if (
                ap.dims[0][0] != data.dims[0][0]
                or math.prod(ap.shape[1:]) != 1
                or ap.t.dtype != "float32"
            ):
                _fail(
                    "activation scale must be a scalar or a [P, 1] fp32 vector",
                    "err_activation_scale_invalid_type",
                    self.line,
                )
            self._onchip(ap, "activation scale")
            scale = ap
        elif isinstance(attrs.get("scale"), bool) or not isinstance(
            attrs.get("scale"), (int, float)
        ):
            raise ValueError("scale")
        if k != len(srcs):
            raise ValueError("operand count")
        red = None
        cmd = attrs.get("reduce_cmd", "reset_reduce" if attrs.get("reduce") else "idle")
        if cmd not in REDUCE_CMDS:
            raise ValueError("reduce_cmd")
        if attrs.get("reduce"):
            red = dsts[1]
            self._onchip(red, "activation reduce_res")
            if red.dims[0][0] != data.dims[0][0] or math.prod(red.shape[1:]) != 1:
                _fail(
                    "activation reduce_res must be a [P, 1] tile",
                    "err_num_partition_mismatch",
                    self.line,
                )
        elif len(dsts) != 1:
            raise ValueError("dst count")
        if self.numeric:
            x = self._read(data)
            shape1 = (self.seeds, data.dims[0][0], *([1] * (len(data.dims) - 1)))
            x = x * (
                self._read(scale).reshape(shape1)
                if scale is not None
                else np.float32(attrs["scale"])
            )
            if bias is not None:
                x = x + self._read(bias).reshape(shape1)
            with np.errstate(all="ignore"):
                y = ACT[func](x).astype(np.float32)
            self._write(d, y)
            if cmd != "idle" or red is not None:
                self._reduce_registers(data, y, cmd, red)
        fused = self.index in self.fusions.act_reduce  # the add-reduce that follows merges in
        end = self._compute(
            "act",
            "activation",
            _free(d),
            dsts,
            srcs,
            extra_cycles=64 if red is not None or fused else 0,
        )
        if fused or self.index in self.fusions.act_copy:
            self.fused_end[self.index] = end

    def _reduce_registers(self, data: AP, y: np.ndarray, cmd: str, red: AP | None) -> None:
        """Apply ``cmd`` to the reduce registers of ``data``'s partitions with the free-axis sum
        of the activation's result ``y``; ``red`` receives the registers afterwards."""
        t = data.t
        p0 = (data.offset % (t.parts * t.free)) // t.free if t.buffer != "hbm" else 0
        lanes = slice(p0, p0 + data.dims[0][0])
        if cmd == "reset":
            self.act_regs[:, lanes] = 0.0
        elif cmd in ("reduce", "reset_reduce"):
            total = y.reshape(self.seeds, y.shape[1], -1).sum(axis=2, dtype=np.float32)
            if cmd == "reduce":
                total += self.act_regs[:, lanes]
            self.act_regs[:, lanes] = total
        if red is not None:
            self._write(red, self.act_regs[:, lanes].reshape((self.seeds, *red.shape)))

    def _op_tensor_reduce(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        op = attrs["op"]
        if op not in REDUCE:
            raise ValueError("op")
        self._elementwise_checks("dve", dsts, srcs, f"tensor_reduce {op}")
        axes = tuple(_as_int(a, "axis") for a in attrs["axes"])
        rank = len(s.dims)
        if not axes or 0 in axes or any(not 0 < a < rank for a in axes):
            _fail(
                "reductions run over free axes only (not the partition axis 0)",
                "err_unsupported_reduce_axis",
                self.line,
            )
        if attrs.get("strict") and (sorted(axes) != list(range(min(axes), rank))):
            _fail(
                "tensor_reduce axes must be consecutive and include the last axis",
                "err_unsupported_reduce_axis",
                self.line,
            )
        kept = [n for a, n in enumerate(s.shape) if a not in axes]
        if math.prod(d.shape) != math.prod(kept) or d.dims[0][0] != s.dims[0][0]:
            _fail(
                f"reduction output {list(d.shape)} does not match the reduced shape",
                "err_num_partition_mismatch",
                self.line,
            )
        if self.numeric:
            x = self._read(s)
            with np.errstate(all="ignore"):
                r = REDUCE[op](x, axis=tuple(a + 1 for a in axes))
            if attrs.get("negate"):
                r = -r
            self._write(d, r.reshape((self.seeds, *d.shape)))
        bf16_fast = s.t.dtype == "bfloat16" and op in ("add", "max")  # nisa docs: N/2
        act = self.fusions.reduce_into_act.get(self.index)
        if act is not None and act in self.fused_end:  # ScalarE's activation computed it
            self.sched.commit(self.fused_end[act], "act", [self._box(d)], "tensor_reduce (fused)")
            self._not_issued(
                "activation_reduce",
                "dve",
                "tensor_reduce",
                _free(s),
                dsts,
                srcs,
                k=0.5 if bf16_fast else None,
            )
            return
        self._compute("dve", "tensor_reduce", _free(s), dsts, srcs, k=0.5 if bf16_fast else None)

    def _op_tensor_copy(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        engine = self._engine(attrs, ("dve", "act", "pool"), "dve")
        self._elementwise_checks(engine, dsts, srcs, "tensor_copy")
        self._shape_eq(s, d, "tensor_copy")
        if self.numeric:
            self._write(d, s.view() if s.t.dtype == d.t.dtype else self._read(s))
        act = self.fusions.copy_into_act.get(self.index)
        if act is not None and act in self.fused_end:  # the activation wrote it
            self.sched.commit(self.fused_end[act], "act", [self._box(d)], "tensor_copy (fused)")
            self._not_issued("activation_copy", engine, "tensor_copy", _free(d), dsts, srcs)
            return
        self._compute(engine, "tensor_copy", _free(d), dsts, srcs)

    def _op_memset(self, dsts, srcs, attrs) -> None:
        (d,) = dsts
        engine = self._engine(attrs, ("dve", "pool"), "dve")
        self._elementwise_checks(engine, dsts, [], "memset")
        value = attrs["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or srcs:
            raise ValueError("memset")
        if self.numeric:
            self._write(d, np.float32(value))
        bf16_zero = d.t.dtype == "bfloat16" and value == 0  # nisa docs: N/2
        if self.index in self.fusions.zeroing_matmul:  # the first matmul overwrites instead
            self._not_issued(
                "zeroing_matmul", engine, "memset", _free(d), dsts, [], k=0.5 if bf16_zero else None
            )
            return
        self._compute(engine, "memset", _free(d), dsts, [], k=0.5 if bf16_zero else None)

    def _op_iota(self, dsts, srcs, attrs) -> None:
        (d,) = dsts
        coeffs = [_as_int(c, "coeff") for c in attrs["coeffs"]]
        if len(coeffs) != len(d.dims) or srcs:
            raise ValueError("iota rank")
        self._elementwise_checks("pool", dsts, [], "iota")
        if self.numeric:
            self._write(d, _affine_values(d.shape, coeffs, _as_int(attrs["const"], "const"))[None])
        self._compute("pool", "iota", _free(d), dsts, [], extra_cycles=POOL_FIXED["iota"])

    def _op_affine_select(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        coeffs = [_as_int(c, "coeff") for c in attrs["coeffs"]]
        cmp = attrs["cmp"]
        if len(coeffs) != len(d.dims) or cmp not in ("<", "<=", ">", ">=", "=="):
            raise ValueError("affine_select predicate")
        self._elementwise_checks("pool", dsts, srcs, "affine_select")
        self._shape_eq(s, d, "affine_select")
        if self.numeric:
            v = _affine_values(d.shape, coeffs, _as_int(attrs["const"], "const"))
            keep = {"<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0, "==": v == 0}[cmp]
            self._write(d, np.where(keep[None], self._read(s), np.float32(attrs["on_false"])))
        self._compute(
            "pool", "affine_select", _free(d), dsts, srcs, extra_cycles=POOL_FIXED["affine_select"]
        )

    def _op_select(self, dsts, srcs, attrs) -> None:
        (d,) = dsts
        self._elementwise_checks("dve", dsts, srcs, "nl.where")
        k = 1
        vals = []
        for key in ("x", "y"):
            if attrs.get(key) == "ap":
                vals.append(srcs[k])
                k += 1
            elif isinstance(attrs.get(key), (int, float)) and not isinstance(attrs.get(key), bool):
                vals.append(np.float32(attrs[key]))
            else:
                raise ValueError(key)
        if k != len(srcs):
            raise ValueError("operand count")
        for ap in (srcs[0], *[v for v in vals if isinstance(v, AP)]):
            self._shape_eq(ap, d, "nl.where operands")
        if self.numeric:
            x, y = (self._read(v) if isinstance(v, AP) else v for v in vals)
            self._write(d, np.where(self._read(srcs[0]) != 0, x, y))
        self._compute("dve", "select", _free(d), dsts, srcs)

    def _op_scan(self, dsts, srcs, attrs) -> None:
        (d,) = dsts
        a, b = srcs[0], srcs[1]
        op0, op1 = attrs["op0"], attrs["op1"]
        if op0 not in ALU or op1 not in ALU:
            raise ValueError("op")
        self._elementwise_checks("dve", dsts, srcs, "tensor_tensor_scan")
        self._shape_eq(a, b, "tensor_tensor_scan operands")
        self._shape_eq(a, d, "tensor_tensor_scan output")
        if a.t.buffer == "psum" and b.t.buffer == "psum":
            _fail(
                "tensor_tensor_scan cannot read both inputs from PSUM",
                "err_unsupported_memory",
                self.line,
            )
        init_ap = None
        if attrs.get("initial") == "ap":
            init_ap = srcs[2]
            if init_ap.dims[0][0] != a.dims[0][0] or math.prod(init_ap.shape[1:]) != 1:
                _fail(
                    "tensor_tensor_scan initial must be a scalar or a [P, 1] tile",
                    "err_num_partition_mismatch",
                    self.line,
                )
            if len(srcs) != 3:
                raise ValueError("operand count")
        elif (
            isinstance(attrs.get("initial"), bool)
            or not isinstance(attrs.get("initial"), (int, float))
            or len(srcs) != 2
        ):
            raise ValueError("initial")
        if self.numeric:
            p = a.dims[0][0]
            x0 = self._read(a).reshape(self.seeds, p, -1)
            x1 = self._read(b).reshape(self.seeds, p, -1)
            r = (
                self._read(init_ap).reshape(self.seeds, p)
                if init_ap is not None
                else np.full((self.seeds, p), attrs["initial"], np.float32)
            )
            f0, f1 = ALU[op0], ALU[op1]
            out = np.empty_like(x0)
            with np.errstate(all="ignore"):
                if (
                    op0 == "multiply"
                    and op1 == "add"
                    and not attrs.get("reverse0")
                    and not attrs.get("reverse1")
                ):
                    out = _linear_scan(x0, x1, r)
                else:
                    for i in range(x0.shape[2]):
                        t = f0(r, x0[:, :, i]) if attrs.get("reverse0") else f0(x0[:, :, i], r)
                        r = f1(x1[:, :, i], t) if attrs.get("reverse1") else f1(t, x1[:, :, i])
                        out[:, :, i] = r
            self._write(d, out.reshape((self.seeds, *d.shape)))
        self._compute("dve", "scan", _free(d), dsts, srcs)

    def _op_reciprocal(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        self._elementwise_checks("dve", dsts, srcs, "reciprocal")
        self._shape_eq(s, d, "reciprocal")
        if self.numeric:
            with np.errstate(all="ignore"):
                self._write(d, 1.0 / self._read(s))
        self._compute("dve", "reciprocal", _free(d), dsts, srcs)

    def _op_partition_reduce(self, dsts, srcs, attrs) -> None:
        (d,), (s,) = dsts, srcs
        op = attrs["op"]
        if op not in REDUCE:
            raise ValueError("op")
        self._elementwise_checks("pool", dsts, srcs, "tensor_partition_reduce")
        if d.dims[0][0] != 1 or d.shape[1:] != s.shape[1:]:
            _fail(
                "tensor_partition_reduce output must be [1, F]",
                "err_num_partition_mismatch",
                self.line,
            )
        if self.numeric:
            self._write(d, REDUCE[op](self._read(s), axis=1, keepdims=True))
        self._compute("pool", "partition_reduce", _free(s) * 2, dsts, srcs)

    def _spills(self) -> None:
        """More live SBUF (or PSUM) than the core has: the compiler spills the excess to HBM and reloads
        it (evicts PSUM banks), which the schedule pays as DMA traffic of twice the excess."""
        rep = self.sched.report
        over = max(0, rep.peak_sbuf_bytes - self.gen.sbuf_bytes_per_partition) + max(
            0, rep.peak_psum_bytes - self.gen.psum_bytes_per_partition
        )
        rep.spill_bytes = 2 * over * hw.PMAX

    # ================================================================== outputs
    def _outputs(self, in_ids, out_ids) -> list[np.ndarray]:
        if not out_ids:
            _fail("the kernel returned no output tensor", "err_tensor_output_not_written_to")
        if self.output_specs is not None and len(out_ids) != len(self.output_specs):
            _fail(
                f"the kernel returned {len(out_ids)} outputs, the problem expects {len(self.output_specs)}",
                "err_wrong_outputs",
            )
        outs = []
        for k, tid in enumerate(out_ids):
            t = self.tensors.get(tid)
            if t is None or t.buffer != "hbm" or t.is_input:
                _fail(
                    "kernel outputs must be HBM tensors the kernel created (nl.ndarray(..., buffer=nl.shared_hbm))",
                    "err_wrong_outputs",
                )
            if self.output_specs is not None and t.shape != tuple(self.output_specs[k][0]):
                _fail(
                    f"output {k} has shape {list(t.shape)}, the problem expects {list(self.output_specs[k][0])}",
                    "err_wrong_outputs",
                )
            if self.output_specs is not None and t.dtype != self.output_specs[k][1]:
                _fail(
                    f"output {k} has dtype {t.dtype}, the problem expects {self.output_specs[k][1]}",
                    "err_wrong_outputs",
                )
            if t.writes == 0:
                _fail(
                    f"output {k} ({t.label}) is never written", "err_tensor_output_not_written_to"
                )
            if self.numeric:
                outs.append(t.data.reshape((self.seeds, *t.shape)))
        return outs


class AP:
    """A validated access pattern."""

    __slots__ = ("dims", "hi", "offset", "t")

    def __init__(self, t: TensorState, offset: int, dims: list[tuple[int, int]], hi: int) -> None:
        self.t, self.offset, self.dims, self.hi = t, offset, dims, hi

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.dims)

    def same(self, other: AP) -> bool:
        return self.t is other.t and self.offset == other.offset and self.dims == other.dims

    def view(self) -> np.ndarray:
        arr = self.t.data
        item = arr.itemsize
        return as_strided(
            arr[:, self.offset :],
            shape=(arr.shape[0], *self.shape),
            strides=(arr.strides[0], *(s * item for _, s in self.dims)),
        )

    def view_of(self, flat: np.ndarray) -> np.ndarray:
        item = flat.itemsize
        return as_strided(
            flat[self.offset :], shape=self.shape, strides=tuple(s * item for _, s in self.dims)
        )


def _linear_scan(a: np.ndarray, b: np.ndarray, r0: np.ndarray, chunk: int = 64) -> np.ndarray:
    """``r[i] = a[i] * r[i-1] + b[i]`` along the last axis, in fp64, chunk by chunk: a scan inside every
    chunk at once, then each chunk's carry-in times the running product of its ``a``."""
    n = a.shape[-1]
    nc = -(-n // chunk)
    pad = nc * chunk - n
    a64 = np.pad(a.astype(np.float64), [(0, 0)] * (a.ndim - 1) + [(0, pad)], constant_values=1.0)
    b64 = np.pad(b.astype(np.float64), [(0, 0)] * (b.ndim - 1) + [(0, pad)])
    a64 = a64.reshape(*a.shape[:-1], nc, chunk)
    b64 = b64.reshape(*b.shape[:-1], nc, chunk)
    local = np.empty_like(b64)
    r = np.zeros(a64.shape[:-1])
    for j in range(chunk):
        r = a64[..., j] * r + b64[..., j]
        local[..., j] = r
    reach = np.cumprod(a64, axis=-1)
    carry = r0.astype(np.float64)
    for c in range(nc):
        local[..., c, :] += carry[..., None] * reach[..., c, :]
        carry = local[..., c, -1]
    return local.reshape(*a.shape[:-1], nc * chunk)[..., :n].astype(np.float32)


def _free(ap: AP) -> int:
    return math.prod(ap.shape[1:])


def _runs(ap: AP) -> int:
    """Contiguous runs (DMA descriptors) of an access."""
    elems = math.prod(ap.shape)
    run, expect = 1, 1
    for n, s in reversed(ap.dims):
        if n == 1:
            continue
        if s != expect:
            break
        run *= n
        expect *= n
    if ap.t.buffer != "hbm":
        run = min(run, _free(ap) or 1)
    return max(1, elems // run)


def _injective(dims: list[tuple[int, int]]) -> bool:
    extent = 0
    for n, s in sorted((d for d in dims if d[0] > 1), key=lambda d: d[1]):
        if s <= extent:
            return False
        extent += (n - 1) * s
    return True


def _affine_values(shape, coeffs, const) -> np.ndarray:
    v = np.full(shape, const, dtype=np.float64)
    for a, c in enumerate(coeffs):
        if c:
            idx = np.arange(shape[a]).reshape([-1 if b == a else 1 for b in range(len(shape))])
            v = v + c * idx
    return v.astype(np.float32)


def _tensor_tensor_k(op: str, a: AP, b: AP, d: AP) -> float:
    """VectorE cycles per element of a tensor_tensor (nisa docs): N when one input is in PSUM
    (only one operand streams from SBUF), or when every operand is bf16 and the op is an add,
    multiply or subtract over contiguous elements; 2N otherwise."""
    if a.t.buffer == "psum" or b.t.buffer == "psum":
        return 1.0
    if op in ("add", "multiply", "subtract") and all(
        ap.t.dtype == "bfloat16" and ap.dims[-1][1] == 1 for ap in (a, b, d)
    ):
        return 1.0
    return DVE_K["tensor_tensor"]


@dataclass
class Fusions:
    """Instructions the compiler merges, found from the trace's order before it is replayed."""

    #: memsets of a tile whose next use is a matmul accumulating into it: the first matmul of an
    #: accumulation group overwrites its PSUM bank, so the zeroing is never issued
    zeroing_matmul: set[int] = field(default_factory=set)
    #: activations whose output is next read by an add-reduce over all of its free axes: one
    #: ScalarE activation-with-reduce does both (the reduce costs ~64 cycles more on ScalarE)
    act_reduce: set[int] = field(default_factory=set)
    reduce_into_act: dict[int, int] = field(default_factory=dict)  # reduce event -> activation
    #: activations that write, besides (or instead of) their output, a copy of it
    act_copy: set[int] = field(default_factory=set)
    copy_into_act: dict[int, int] = field(default_factory=dict)  # copy event -> activation

    def taken(self) -> set[int]:
        """Every instruction one of these merges involves."""
        return (
            self.zeroing_matmul
            | self.act_reduce
            | set(self.reduce_into_act)
            | self.act_copy
            | set(self.copy_into_act)
        )


def compiler_fusions(events: list) -> Fusions:
    """The merges of ``Fusions`` in a trace (malformed events are left to the replay to refuse)."""
    fusions = Fusions()
    pending_memset: dict[object, int] = {}  # tensor id -> its memset, not yet used since
    pending_act: dict[object, tuple[int, list]] = {}  # tensor id -> (activation, its output)
    for index, e in enumerate(events):
        if not (isinstance(e, list) and len(e) == 6 and e[0] == "op"):
            continue
        _, name, dsts, srcs, attrs, _line = e
        if not (isinstance(dsts, list) and isinstance(srcs, list) and isinstance(attrs, dict)):
            continue
        aps = [ap for ap in (*dsts, *srcs) if isinstance(ap, list) and len(ap) == 3]
        for tid in {repr(ap[0]) for ap in aps}:
            memset = pending_memset.pop(tid, None)
            if (
                memset is not None
                and name == "matmul"
                and attrs.get("acc")
                and aps
                and repr(aps[0][0]) == tid
            ):
                fusions.zeroing_matmul.add(memset)
            act = pending_act.pop(tid, None)
            if (
                act is not None
                and name == "tensor_reduce"
                and attrs.get("op") == "add"
                and not attrs.get("negate")
                and srcs == [act[1]]
                and isinstance(act[1][2], list)
                and attrs.get("axes") == list(range(1, len(act[1][2])))
            ):
                fusions.act_reduce.add(act[0])
                fusions.reduce_into_act[index] = act[0]
        if name == "memset" and len(dsts) == 1 and dsts[0] in aps:
            pending_memset[repr(dsts[0][0])] = index
        if name == "activation" and len(dsts) == 1 and not attrs.get("reduce") and dsts[0] in aps:
            pending_act[repr(dsts[0][0])] = (index, dsts[0])
    _copies_into_activations(events, fusions)
    return fusions


def _copies_into_activations(events: list, fusions: Fusions) -> None:
    """A tensor_copy whose source is an activation's whole output, which nothing else reads:
    the activation writes the copy's destination itself (an activation casts to its output's
    dtype at no extra cost, nisa docs), so the copy is not issued. Where the output has another
    reader the copy stays (the published sd_attention chain: its start program's exp output, read
    by a sum and by a cast, costs the cast; step 3's, read by the cast alone, does not)."""
    ops = [
        (index, e)
        for index, e in enumerate(events)
        if isinstance(e, list)
        and len(e) == 6
        and e[0] == "op"
        and isinstance(e[2], list)
        and isinstance(e[3], list)
        and isinstance(e[4], dict)
    ]
    reads: dict[str, int] = {}
    for _index, e in ops:
        for ap in e[3]:
            if isinstance(ap, list) and len(ap) == 3:
                reads[repr(ap[0])] = reads.get(repr(ap[0]), 0) + 1
    output: dict[str, tuple[int, list]] = {}  # tensor id -> (activation, its output)
    for index, (_, name, dsts, srcs, _attrs, _line) in ops:
        if name == "tensor_copy" and len(srcs) == 1 and isinstance(srcs[0], list):
            tid = repr(srcs[0][0]) if len(srcs[0]) == 3 else None
            act = output.get(tid)
            if act is not None and srcs[0] == act[1] and reads.get(tid) == 1:
                fusions.act_copy.add(act[0])
                fusions.copy_into_act[index] = act[0]
        if name == "activation" and dsts and isinstance(dsts[0], list) and len(dsts[0]) == 3:
            output[repr(dsts[0][0])] = (index, dsts[0])


def replay(
    trace: dict, gen: Generation, input_specs, inputs=None, output_specs=None, seeds: int = 1
) -> ReplayResult:
    return Replayer(trace, gen, input_specs, inputs, output_specs, seeds).run()
