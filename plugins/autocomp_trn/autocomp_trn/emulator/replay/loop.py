"""The event loop: read the trace's header, then each event in order (allocations, loops and
their iterations, instructions), free each tensor after its last use, and hand back the outputs
and the cost."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes, hardware as hw
from ..cost import Regions
from ..hardware import Generation
from ..vectorize import vectorized_loops
from .dead import dead_instructions
from .fori import ForiBodies
from .fusions import compiler_fusions
from .memory import OutOfMemory, floor_writes
from .ops import OPS
from .rules import injective, loop_checks
from .state import (
    AP,
    INT_SENTINEL,
    Core,
    Frame,
    ReplayResult,
    TensorState,
    TraceRefused,
    as_int,
    fail,
)

#: whatever a malformed trace makes the replay raise is the trace's fault, not ours
MALFORMED = (
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)


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
        self.hbm_live = 0  # bytes of HBM tensors held at once (on-chip: ``core.memory``)
        self.core = Core(gen, seeds, self.numeric)
        self.fori = ForiBodies()
        self.slots: dict[tuple, Regions] = {}  # a fori_loop body's tiles: one address each

    def run(self) -> ReplayResult:
        """Replay under the kernel's CompileConfig; where NKI's own allocation runs out of
        memory, as neuronx-cc allocates (``nki_alloc_fallback``, on by default) or refused."""
        policy = self.core.sched.policy
        self.core.memory.nki_allocation = policy.nki_allocation
        try:
            return self._run()
        except OutOfMemory as exc:
            if not policy.alloc_fallback:
                fail(
                    f"{exc.message} (nki_alloc_fallback=False: no fallback to neuronx-cc's "
                    "allocation)",
                    "err_out_of_memory",
                    self.core.line,
                )
            again = Replayer(
                self.trace,
                self.gen,
                self.input_specs,
                self.inputs,
                self.output_specs,
                self.seeds,
                self.max_events,
            )
            again.core.sched.set_policy(policy.fallen_back(exc.message))
            return again._run()

    def _run(self) -> ReplayResult:
        core = self.core
        try:
            events, in_ids, out_ids = self._header()
            last_use = _last_uses(events)
            core.dead = dead_instructions(events, out_ids)
            core.fusions = compiler_fusions(events)
            vector = vectorized_loops(events, core.fusions.taken(), self.gen.vector_fmax)
            core.lanes = vector.lanes
            core.sched.report.long_loops = vector.long_loops
            core.sched.report.long_loop_instructions = vector.long_instructions
            for index, event in enumerate(events):
                core.index = index
                self._event(event)
                for tid in last_use.get(index, ()):
                    self._release(tid, out_ids)
            if self.frames:
                fail("malformed trace: a loop never ended", "err_trace_tampered")
            self._spills()
            outputs = self._outputs(in_ids, out_ids)
        except TraceRefused:
            raise
        except MALFORMED as exc:
            fail(f"malformed trace: {exc}", "err_trace_tampered", core.line)
        return ReplayResult(outputs, core.sched.finish(), len(events), core.cost_s)

    def _header(self):
        t = self.trace
        if not isinstance(t, dict) or t.get("version") != 1:
            fail("malformed trace: unknown version", "err_trace_tampered")
        events, ins, outs = t.get("events"), t.get("inputs"), t.get("outputs")
        if not isinstance(events, list) or not isinstance(ins, list) or not isinstance(outs, list):
            fail("malformed trace: missing events, inputs or outputs", "err_trace_tampered")
        if len(events) > self.max_events:
            fail(
                f"the trace has {len(events)} events, over the limit of {self.max_events}",
                "err_trace_too_long",
            )
        if len(ins) != len(self.input_specs):
            fail(
                f"the kernel was traced with {len(ins)} inputs, the problem has {len(self.input_specs)}",
                "err_trace_tampered",
            )
        ins = [as_int(i, "input id") for i in ins]
        if ins != list(range(len(ins))):
            fail("malformed trace: the inputs must be the first tensors", "err_trace_tampered")
        return events, ins, [as_int(i, "output id") for i in outs]

    def _release(self, tid, out_ids) -> None:
        t = self.tensors.get(tid)
        if t is None or t.is_input or tid in out_ids:
            return
        t.data = None
        if t.buffer == "hbm":
            self.hbm_live -= t.size * t.itemsize
        else:
            self.core.memory.release(tid, t.regions)

    # ================================================================== events
    def _event(self, e) -> None:
        if not isinstance(e, list) or not e:
            raise ValueError("an event is not a list")
        kind = e[0]
        if kind == "op":
            self._op(e)
        elif kind == "alloc":
            self._alloc(e)
        elif kind == "loop":
            _, loop_kind, n, line = e
            if loop_kind not in ("affine", "sequential", "static", "fori", "while"):
                raise ValueError("loop kind")
            self.frames.append(
                Frame(
                    loop_kind,
                    as_int(n, "trip count"),
                    as_int(line, "line"),
                    self.next_fid,
                    len(self.frames),
                )
            )
            self.next_fid += 1
            self.fori.loop(self.frames)
        elif kind == "iter":
            f = self.frames[-1]
            i = as_int(e[1], "iteration")
            if i != f.it + 1 or i >= f.n:
                raise ValueError("iterations out of order")
            f.it = i
            self.fori.iteration(self.frames)
        elif kind == "end":
            f = self.frames.pop()
            if f.it != f.n - 1:
                fail(
                    "malformed trace: a loop ended before its last iteration", "err_trace_tampered"
                )
            self.fori.end(f, self.frames)
        else:
            raise ValueError(f"unknown event {kind!r}")

    def _op(self, e) -> None:
        core = self.core
        _, name, dsts, srcs, attrs, line = e
        core.line = as_int(line, "line")
        if not isinstance(attrs, dict) or not isinstance(dsts, list) or not isinstance(srcs, list):
            raise TypeError("op fields")
        handler = OPS.get(str(name))
        if handler is None:
            fail(f"unknown instruction {name!r}", "err_trace_tampered", core.line)
        dst_aps = [self._ap(a, write=True) for a in dsts]
        src_aps = [self._ap(a) for a in srcs]
        if self.frames:
            loop_checks(self.frames, dst_aps, src_aps, bool(attrs.get("acc")), core.line)
        self.fori.op(e, self.frames)
        handler(core, dst_aps, src_aps, attrs)
        for ap in dst_aps:
            ap.t.writes += 1

    def _path(self) -> tuple:
        return tuple((f.fid, f.it) for f in self.frames)

    # ================================================================== allocations
    def _alloc(self, e) -> None:
        _, tid, shape, dtype, buffer, par_axis, line = e
        tid = as_int(tid, "tensor id")
        self.core.line = as_int(line, "line")
        if tid in self.tensors:
            raise ValueError("tensor allocated twice")
        shape = tuple(as_int(n, "dimension") for n in shape)
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
            as_int(par_axis, "par axis"),
            "",
            self._path(),
            size,
            dtypes.itemsize(dtype),
            self.core.line,
        )
        if buffer == "hbm":
            self._place_in_hbm(t)
        else:
            wait = self._place_on_chip(t)
            slot = self.fori.alloc(e, self.frames)
            if slot is not None:  # the body exists once on device: every instance, one buffer
                t.regions = self.slots.setdefault(slot, t.regions)
            floor_writes(t.regions, wait)
        if len(self.tensors) < len(self.input_specs):  # the first allocations are the kernel inputs
            spec_shape, spec_dtype = self.input_specs[len(self.tensors)]
            if buffer != "hbm" or shape != tuple(spec_shape) or dtype != spec_dtype:
                fail(
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

    def _place_in_hbm(self, t: TensorState) -> None:
        line, shape = self.core.line, t.shape
        if self.frames:
            fail(
                "HBM tensors (kernel outputs) must be created at the kernel's top level, not inside a loop",
                "err_shared_hbm_must_in_kernel_level",
                line,
            )
        c = shape[-1]
        t.regions = Regions(t.size // c, c)
        self.hbm_live += t.size * t.itemsize
        if self.hbm_live > self.gen.hbm_bytes:
            fail(
                f"HBM tensors of {self.hbm_live / 2**30:.1f} GiB at once (this one "
                f"{list(shape)} {t.dtype}) exceed the {self.gen.hbm_bytes >> 30} GiB of HBM on "
                f"{self.gen.name}",
                "err_hbm_capacity",
                line,
            )

    def _place_on_chip(self, t: TensorState) -> float:
        """Check the tile and take its memory: returns when its first write may start."""
        line, shape, buffer = self.core.line, t.shape, t.buffer
        if not 0 <= t.par_axis < len(shape):
            raise ValueError("bad partition axis")
        parts = shape[t.par_axis]
        if len(shape) < 2 or t.par_axis == len(shape) - 1:
            fail(
                f"on-chip tile of shape {list(shape)} needs a partition dim and at least one free dim",
                "err_insufficient_rank",
                line,
            )
        if parts > hw.PMAX:
            fail(
                f"Size of partition dimension {parts} exceeds architecture limitation of {hw.PMAX}",
                "err_num_partition_exceed_arch_limit",
                line,
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
            fail(
                f"a {where} tile of {pbytes} bytes per partition ({list(shape)} {t.dtype}) exceeds the "
                f"{cap // 1024} KiB per partition of {where} on {self.gen.name}",
                "err_out_of_memory",
                line,
            )
        blocks = t.size // (parts * t.free)
        t.regions = Regions(blocks * parts, t.free)
        label = f"{t.label} (line {line})" if line else t.label
        return self.core.memory.place(t.tid, buffer, _pbytes(t), label)

    # ================================================================== access patterns
    def _ap(self, raw, write: bool = False) -> AP:
        line = self.core.line
        tid, offset, dims = raw
        t = self.tensors.get(as_int(tid, "tensor id"))
        if t is None:
            fail(
                "malformed trace: an instruction uses a tensor that was never allocated",
                "err_trace_tampered",
                line,
            )
        offset = as_int(offset, "offset")
        dims = [(as_int(n, "size"), as_int(s, "stride")) for n, s in dims]
        if not dims or offset < 0 or any(n <= 0 or s < 0 for n, s in dims):
            raise ValueError("bad access pattern")
        hi = offset + sum((n - 1) * s for n, s in dims)
        if hi >= t.size:
            fail(f"access out of bounds of {t.label}", "err_tensor_access_out_of_bound", line)
        path = self._path()
        if path[: len(t.path)] != t.path:
            fail(
                f"{t.label} (created at line {t.line}) is used outside the loop body that created it",
                "err_local_variable_used_out_of_scope",
                line,
            )
        if write:
            if t.is_input:
                fail(
                    "kernel inputs are immutable: write results to a new tensor",
                    "err_cannot_update_immutable_parameter",
                    line,
                )
            if not injective(dims):
                fail(
                    "an instruction writes through an overlapping or broadcast access pattern",
                    "err_unsupported_index_expression",
                    line,
                )
        return AP(t, offset, dims, hi)

    # ================================================================== the end
    def _spills(self) -> None:
        """More live SBUF (or PSUM) than the core has: the compiler spills the excess to HBM and reloads
        it (evicts PSUM banks), which the schedule pays as DMA traffic of twice the excess."""
        rep, peak = self.core.sched.report, self.core.memory.peak
        rep.peak_sbuf_bytes, rep.peak_psum_bytes = peak["sbuf"], peak["psum"]
        over = max(0, rep.peak_sbuf_bytes - self.gen.sbuf_bytes_per_partition) + max(
            0, rep.peak_psum_bytes - self.gen.psum_bytes_per_partition
        )
        rep.spill_bytes = 2 * over * hw.PMAX

    def _outputs(self, in_ids, out_ids) -> list[np.ndarray]:
        if not out_ids:
            fail("the kernel returned no output tensor", "err_tensor_output_not_written_to")
        specs = self.output_specs
        if specs is not None and len(out_ids) != len(specs):
            fail(
                f"the kernel returned {len(out_ids)} outputs, the problem expects {len(specs)}",
                "err_wrong_outputs",
            )
        outs = []
        for k, tid in enumerate(out_ids):
            t = self.tensors.get(tid)
            if t is None or t.buffer != "hbm" or t.is_input:
                fail(
                    "kernel outputs must be HBM tensors the kernel created (nl.ndarray(..., buffer=nl.shared_hbm))",
                    "err_wrong_outputs",
                )
            if specs is not None and t.shape != tuple(specs[k][0]):
                fail(
                    f"output {k} has shape {list(t.shape)}, the problem expects {list(specs[k][0])}",
                    "err_wrong_outputs",
                )
            if specs is not None and t.dtype != specs[k][1]:
                fail(
                    f"output {k} has dtype {t.dtype}, the problem expects {specs[k][1]}",
                    "err_wrong_outputs",
                )
            if t.writes == 0:
                fail(f"output {k} ({t.label}) is never written", "err_tensor_output_not_written_to")
            if self.numeric:
                outs.append(t.data.reshape((self.seeds, *t.shape)))
        return outs


def _last_uses(events: list) -> dict[int, list[int]]:
    """Event index -> the tensors it uses for the last time."""
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


def _pbytes(t: TensorState) -> int:
    """The bytes per partition an on-chip tensor holds (PSUM in whole banks)."""
    b = (t.size // t.parts) * t.itemsize if t.parts else 0
    if t.buffer == "psum":
        b = math.ceil(b / hw.PSUM_BANK_BYTES) * hw.PSUM_BANK_BYTES
    return b
