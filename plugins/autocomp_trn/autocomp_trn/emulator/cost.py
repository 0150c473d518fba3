"""The cost model: per-instruction engine time and a list schedule over the NeuronCore's engines.

Each instruction runs on one engine (TensorE ``pe``, VectorE ``dve``, ScalarE ``act``, GpSimd
``pool``) or on the DMA engines. An instruction starts when its operands are ready: a read waits
for the last write of the region, a write also for the last reads and writes (so a buffer
declared outside a loop serializes the iterations, while a tile declared inside gets a new
instance each iteration and overlaps; not in an ``nl.fori_loop``, whose body exists once on
device: each of its tiles is one buffer, its instances share their regions, ``replay.fori``). The compiler schedules independent instructions across
loop iterations, so an instruction may fill an idle gap of its engine left by earlier ones that
waited on other engines (within the last ``REORDER_WINDOW`` gaps of that engine). On
NeuronCore-v2 VectorE and GpSimd share the SBUF port and so one timeline.
A dependency on another engine adds a semaphore hop. DMA transfers split over the 16 DMA
engines (8 partitions each) and share this core's HBM bandwidth. Latency = makespan + launch.
What the compiler merges is decided before the schedule: an activation with the add-reduce or
the copy of its output, a PSUM zeroing that a matmul group overwrites
(``replay.compiler_fusions``), and short affine_range loops of elementwise instructions, each
issued as one fused instruction per body instruction (``vectorize.py``).

A kernel's ``CompileConfig`` (``CompilePolicy``) changes when a write may start. By default
neuronx-cc allocates (as above). Under NKI allocation (``allocation=Allocation.LINEAR``) a
load's destination tile takes the address its previous instance (the same declaration, one
iteration earlier) freed after its last read, so the load waits for those reads, unless
``prefetch_auto`` puts it in the prefetch ring; ``split_reused_buffers`` gives a DMA load into a
buffer the kernel reuses a second buffer to alternate with, so the load waits only for the reads
of the value two loads back (docs: "Deep dive: NKI compile configuration", "How to tune a NKI
kernel with CompileConfig", ``nki.compiler.AllocationMode``).

Everything here is computed by the trusted side from the replayed trace (nki.md section 5).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace

import numpy as np

from .hardware import Generation

ENGINES = ("pe", "act", "dve", "pool")
ENGINE_OF = {"tensor": "pe", "vector": "dve", "scalar": "act", "gpsimd": "pool"}
ENGINE_NAMES = {"pe": "TensorE", "act": "ScalarE", "dve": "VectorE", "pool": "GpSimd", "dma": "DMA"}
ENGINE_ID = {"pe": 0, "act": 1, "dve": 2, "pool": 3, "dma": 4}
GRID = 64  # dependency buckets per axis of a tensor
REORDER_WINDOW = 64  # how many idle gaps back in an engine's schedule an instruction may be placed
ELEMENT_BYTES = 4  # the widest element a DMA moves one at a time (fp32)


class Timeline:
    """An engine's busy intervals, sorted; new work goes into the first gap that fits."""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def place(self, ready: float, dur: float) -> float:
        starts, ends = self.starts, self.ends
        n = len(starts)
        lo = max(0, n - REORDER_WINDOW)
        floor = starts[lo] if n > lo else 0.0
        t = max(ready, floor)
        p = bisect.bisect_left(starts, t, lo)
        if p > lo:
            t = max(t, ends[p - 1])
        while p < n and t + dur > starts[p]:
            t = max(t, ends[p])
            p += 1
        end = t + dur
        joins_prev = p > 0 and ends[p - 1] >= t - 1e-6
        joins_next = p < n and starts[p] <= end + 1e-6
        if (
            joins_prev and joins_next
        ):  # busy streaks are kept merged: the scan above visits gaps only
            ends[p - 1] = ends[p]
            del starts[p], ends[p]
        elif joins_prev:
            ends[p - 1] = end
        elif joins_next:
            starts[p] = t
        else:
            starts.insert(p, t)
            ends.insert(p, end)
        return t


@dataclass(frozen=True)
class CompilePolicy:
    """What a kernel's CompileConfig changes in the schedule; the default is neuronx-cc's
    allocation. ``unmodelled``: the options the kernel set whose effect the model leaves out."""

    nki_allocation: bool = False  # allocation=Allocation.LINEAR
    prefetch: bool = False  # prefetch_auto (also on at opt_level O2)
    split_reused: bool = False  # split_reused_buffers
    alloc_fallback: bool = True  # nki_alloc_fallback: NKI allocation out of memory -> neuronx-cc's
    fallback: str = ""  # why NKI allocation failed, where the kernel is priced as neuronx-cc's
    unmodelled: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # every option set, as (name, value) for the report

    @classmethod
    def of(cls, options: dict) -> CompilePolicy:
        """From a validated CompileConfig (``compiler.validate_recorded``): enums and bools."""
        values = {k: getattr(v, "value", v) for k, v in options.items()}
        linear = values.get("allocation") == "linear"
        o2 = values.get("opt_level") == "o2"
        prefetch = linear and values.get("prefetch_auto", o2)
        split = linear and values.get("split_reused_buffers", False)
        # opt_level: only O2's prefetch_auto is modelled, so it is listed as not modelled
        modelled = {"allocation", "prefetch_auto", "split_reused_buffers", "nki_alloc_fallback"}
        return cls(
            nki_allocation=linear,
            prefetch=bool(prefetch),
            split_reused=bool(split),
            alloc_fallback=bool(values.get("nki_alloc_fallback", True)),
            unmodelled=tuple(sorted(k for k in values if k not in modelled)),
            options=tuple(sorted((k, str(v).lower()) for k, v in values.items())),
        )

    def fallen_back(self, why: str) -> CompilePolicy:
        """NKI allocation failed (``why``): the kernel compiles with neuronx-cc's allocation."""
        return replace(self, nki_allocation=False, prefetch=False, split_reused=False, fallback=why)


class Regions:
    """Per-tensor grid of last-write / last-read completion times, for dependencies;
    ``r_prev``: the last reads before the latest write (kept under ``split_reused_buffers``)."""

    __slots__ = ("cb", "cols", "r_end", "r_prev", "rb", "rows", "w_end", "w_eng")

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.rb = max(1, math.ceil(rows / GRID))
        self.cb = max(1, math.ceil(cols / GRID))
        shape = (math.ceil(rows / self.rb), math.ceil(cols / self.cb))
        self.w_end = np.zeros(shape)
        self.r_end = np.zeros(shape)
        self.w_eng = np.full(shape, -1, dtype=np.int8)
        self.r_prev: np.ndarray | None = None

    def box(self, r0: int, r1: int, c0: int, c1: int) -> tuple[slice, slice]:
        return slice(r0 // self.rb, (r1 - 1) // self.rb + 1), slice(
            c0 // self.cb, (c1 - 1) // self.cb + 1
        )


@dataclass
class CostReport:
    latency_ns: float = 0.0
    busy_ns: dict[str, float] = field(default_factory=lambda: {e: 0.0 for e in (*ENGINES, "dma")})
    counts: dict[str, int] = field(default_factory=dict)
    dma_bytes: int = 0
    hbm_bytes: int = 0
    flops: float = 0.0
    instructions: int = 0
    peak_sbuf_bytes: int = 0  # per partition
    peak_psum_bytes: int = 0
    spill_bytes: int = 0
    small_dmas: int = 0
    strided_dmas: int = 0
    vectorized_loops: int = 0  # affine_range loops issued as one instruction per body instruction
    vectorized_instructions: int = 0  # the instructions of those loops' iterations
    # what the model's known limits (model_limits.py) read:
    long_loops: int = 0  # loops vectorize.py would fuse but for the size limit
    long_loop_instructions: int = 0
    floor_ns: dict[str, float] = field(default_factory=dict)  # per engine: instructions at min_ii
    floor_instructions: dict[str, int] = field(default_factory=dict)
    element_dma_ns: float = 0.0  # element-granular transfers' DMA time (per engine, as busy_ns)
    fused_ns: dict[str, float] = field(default_factory=dict)  # per merge: engine time not charged
    compile_config: tuple[tuple[str, str], ...] = ()  # the kernel's CompileConfig, as set
    compile_unmodelled: tuple[str, ...] = ()  # of those, the options the model leaves out
    allocation_fallback: str = ""  # why NKI allocation failed, where neuronx-cc's was priced
    dead_instructions: int = 0  # instructions whose results nothing reads (replay/dead.py)
    dead_ns: float = 0.0  # their engine time, added after the schedule of the live ones

    @property
    def latency_us(self) -> float:
        return self.latency_ns / 1000.0

    def critical_engine(self) -> str:
        return max(self.busy_ns, key=lambda e: self.busy_ns[e])

    def summary(self) -> str:
        lat = self.latency_ns
        lines = [
            f"modelled latency {self.latency_us:.2f} us (emulator cost model, not a measurement)"
        ]
        crit = self.critical_engine()
        parts = []
        for e in ("pe", "act", "dve", "pool", "dma"):
            busy = self.busy_ns[e]
            parts.append(
                f"{ENGINE_NAMES[e]} {busy / 1000:.1f} us ({100 * busy / lat if lat else 0:.0f}%)"
            )
        lines.append("engine busy time: " + ", ".join(parts))
        lines.append(f"critical engine: {ENGINE_NAMES[crit]}")
        top = sorted(self.counts.items(), key=lambda kv: -kv[1])[:6]
        lines.append(
            f"instructions: {self.instructions} ("
            + ", ".join(f"{k} {v}" for k, v in top)
            + ")"
            + (
                f"; {self.vectorized_loops} affine_range loops vectorized: "
                f"{self.vectorized_instructions} iterations' instructions issued as fused ones"
                if self.vectorized_loops
                else ""
            )
        )
        lines.append(
            f"DMA: {self.dma_bytes / 2**20:.2f} MiB moved, {self.hbm_bytes / 2**20:.2f} MiB to/from HBM"
            + (
                f", {self.small_dmas} transfers under 512 B per partition"
                if self.small_dmas
                else ""
            )
            + (
                f", {self.strided_dmas} element-granular (strided/transposing) transfers"
                if self.strided_dmas
                else ""
            )
        )
        lines.append(
            f"peak SBUF {self.peak_sbuf_bytes / 1024:.1f} KiB/partition, peak PSUM "
            f"{self.peak_psum_bytes / 1024:.1f} KiB/partition"
            + (
                f"; {self.spill_bytes / 2**20:.2f} MiB spilled (over capacity)"
                if self.spill_bytes
                else ""
            )
        )
        if self.compile_config:
            lines.append("CompileConfig: " + ", ".join(f"{k}={v}" for k, v in self.compile_config))
        if self.dead_instructions:
            lines.append(
                f"{self.dead_instructions} dead instructions (nothing reads what they write): "
                f"their {self.dead_ns / 1000:.2f} us of engine time is added after the rest"
            )
        if self.allocation_fallback:
            lines.append(
                f"{self.allocation_fallback}: priced as neuronx-cc allocates (nki_alloc_fallback)"
            )
        return "\n".join(lines)


class Scheduler:
    def __init__(self, gen: Generation, policy: CompilePolicy | None = None) -> None:
        self.gen = gen
        self.policy = policy or CompilePolicy()
        # NKI allocation: the latest instance of each tile declaration, and the tiles placed
        self.instances: dict[tuple, Regions] = {}
        self.placed: set[int] = set()
        self.lines = {e: Timeline() for e in ENGINES}
        if gen.shared_port_locks:
            self.lines["pool"] = self.lines["dve"]
        self.dma_lines = [Timeline() for _ in range(gen.dma_engines)]
        self.hbm_line = Timeline()
        self.end = 0.0
        self.last_end: dict[str, float] = {}  # when each engine's latest instruction ends
        self.report = CostReport()
        self.clock = {
            "pe": gen.pe_ghz,
            "act": gen.act_ghz,
            "dve": gen.dve_ghz,
            "pool": gen.pool_ghz,
        }

    # ------------------------------------------------------------------ dependencies
    def set_policy(self, policy: CompilePolicy) -> None:
        """The kernel's CompileConfig, before the first instruction."""
        self.policy = policy
        self.report.compile_config = policy.options
        self.report.compile_unmodelled = policy.unmodelled
        self.report.allocation_fallback = policy.fallback

    def place_load(self, tid: int, key: tuple, regions: Regions) -> None:
        """Under NKI allocation, a load's destination tile, first written here, takes the
        address the previous instance of its declaration (``key``) freed after its last read:
        the load waits for those reads, unless ``prefetch_auto`` puts it in the prefetch ring.
        (Tiles compute writes first are placed as by default: the docs describe the wait for
        loads.)"""
        if tid in self.placed:
            return
        self.placed.add(tid)
        prev = self.instances.get(key)
        self.instances[key] = regions
        if prev is not None and not self.policy.prefetch:
            freed = max(prev.r_end.max(initial=0.0), prev.w_end.max(initial=0.0))
            np.maximum(regions.r_end, freed, out=regions.r_end)

    def _ready(self, engine: str, reads, writes, split: bool = False) -> float:
        """reads/writes: lists of (Regions, r0, r1, c0, c1). ``split``: a DMA load under
        ``split_reused_buffers``, which alternates between two buffers."""
        eid = ENGINE_ID[engine]
        t = 0.0
        sem = self.gen.sem_ns
        for regs, r0, r1, c0, c1 in reads:
            b = regs.box(r0, r1, c0, c1)
            w = regs.w_end[b]
            if w.size:
                m = w.max()
                if m > 0:
                    other = regs.w_eng[b] != eid
                    t = max(t, m + sem if other.any() and w[other].max() >= m else m)
        for regs, r0, r1, c0, c1 in writes:
            b = regs.box(r0, r1, c0, c1)
            if split and regs.w_end[b].max(initial=0.0) > 0:  # a rewrite: the other buffer
                m = regs.r_prev[b].max(initial=0.0) if regs.r_prev is not None else 0.0
            else:
                m = max(regs.w_end[b].max(initial=0.0), regs.r_end[b].max(initial=0.0))
            if m > 0:
                t = max(t, m + sem)
        return t

    def _reads_last_result(self, engine: str, reads) -> bool:
        last, eid = self.last_end.get(engine), ENGINE_ID[engine]
        if last is None:
            return False
        for regs, r0, r1, c0, c1 in reads:
            b = regs.box(r0, r1, c0, c1)
            if ((regs.w_eng[b] == eid) & (regs.w_end[b] == last)).any():
                return True
        return False

    def _commit(self, end: float, eid: int, reads, writes) -> None:
        for regs, r0, r1, c0, c1 in reads:
            b = regs.box(r0, r1, c0, c1)
            np.maximum(regs.r_end[b], end, out=regs.r_end[b])
        for regs, r0, r1, c0, c1 in writes:
            b = regs.box(r0, r1, c0, c1)
            if self.policy.split_reused:
                if regs.r_prev is None:
                    regs.r_prev = np.zeros_like(regs.r_end)
                regs.r_prev[b] = regs.r_end[b]
            regs.w_end[b] = end
            regs.w_eng[b] = eid

    # ------------------------------------------------------------------ issue
    def compute(
        self, engine: str, cycles: float, reads, writes, kind: str, exposed: float = 0.0
    ) -> float:
        """Place one instruction on its engine; returns when it ends. ``exposed``: cycles added
        when it reads what the engine's previous instruction wrote (a latency the engine's
        pipeline hides behind independent work)."""
        if exposed and self._reads_last_result(engine, reads):
            cycles += exposed
        dur = cycles / self.clock[engine]
        start = self.lines[engine].place(self._ready(engine, reads, writes), dur)
        end = start + dur
        self.last_end[engine] = end
        self._commit(end, ENGINE_ID[engine], reads, writes)
        self.report.busy_ns[engine] += dur
        self._count(kind)
        self.end = max(self.end, end)
        return end

    def commit(self, end: float, engine: str, writes, kind: str) -> None:
        """What another instruction wrote as part of its own work (a fused instruction): ready at
        ``end``, written by ``engine``, taking no time of its own."""
        self._commit(end, ENGINE_ID[engine], [], writes)
        self.report.counts[kind] = self.report.counts.get(kind, 0) + 1

    def dma(
        self,
        parts: int,
        p0: int,
        nbytes: int,
        descriptors: int,
        hbm_bytes: int,
        reads,
        writes,
        kind: str,
        load: bool = False,
    ) -> None:
        """A transfer split over the DMA engines serving its partitions (8 each), each engine's share
        queued into that engine's first idle gap; HBM traffic also takes its share of this core's
        HBM bandwidth. Completion adds the DMA's issue-to-completion latency. ``load``: HBM to
        SBUF."""
        g = self.gen
        ready = self._ready("dma", reads, writes, load and self.policy.split_reused)
        first = (p0 // 8) % g.dma_engines
        n_eng, occupancy, element_granular = self._queues(parts, nbytes, descriptors)
        if n_eng == g.dma_engines:
            first = 0
        if element_granular:
            self.report.element_dma_ns += occupancy * n_eng / g.dma_engines
        done = 0.0
        for k in range(n_eng):
            line = self.dma_lines[(first + k) % g.dma_engines]
            done = max(done, line.place(ready, occupancy) + occupancy)
        if hbm_bytes:
            share = hbm_bytes / (g.hbm_gbs * g.dma_efficiency)
            done = max(done, self.hbm_line.place(ready, share) + share)
        end = done + g.dma_latency_ns
        self._commit(end, ENGINE_ID["dma"], reads, writes)
        self.report.busy_ns["dma"] += occupancy * n_eng
        self.report.dma_bytes += nbytes
        self.report.hbm_bytes += hbm_bytes
        if parts and nbytes / parts < 512:
            self.report.small_dmas += 1
        self._count(kind)
        self.end = max(self.end, end)

    def _queues(self, parts: int, nbytes: int, descriptors: int) -> tuple[int, float, bool]:
        """How many DMA engines a transfer uses, its time on each, and whether it moves one
        element per beat."""
        g = self.gen
        n_eng = max(1, min(g.dma_engines, math.ceil(parts / 8)))
        if descriptors > parts:  # many small descriptors: the DMA rings spread them over all
            n_eng = g.dma_engines
        per_bytes = nbytes / n_eng
        per_desc = math.ceil(descriptors / n_eng)
        # an element-granular transfer (a transposing load, a gather) walks one strided pattern an
        # element per DMA beat: its elements are not descriptors of their own
        element_granular = descriptors > 0 and nbytes / descriptors <= ELEMENT_BYTES
        desc_ns = g.dma_elem_ns if element_granular else g.dma_desc_ns
        occupancy = g.dma_issue_ns + per_desc * desc_ns + per_bytes / g.dma_engine_gbs
        return n_eng, occupancy, element_granular

    def dma_time(self, parts: int, nbytes: int, descriptors: int, hbm_bytes: int) -> float:
        """A transfer's time alone: its queues' occupancy or its share of HBM bandwidth."""
        _, occupancy, _ = self._queues(parts, nbytes, descriptors)
        return max(occupancy, hbm_bytes / (self.gen.hbm_gbs * self.gen.dma_efficiency))

    def dead(self, engine: str, dur: float, kind: str) -> None:
        """A dead instruction (``replay/dead.py``): the greedy schedule is not monotone (work that
        only delays another instruction can open a gap a third fills earlier), so dead work is
        left out of it and its engine time added after it: more work never lowers the latency."""
        self.report.dead_instructions += 1
        self.report.dead_ns += dur
        self.report.busy_ns[engine] += dur * (self.gen.dma_engines if engine == "dma" else 1)
        self._count(kind)

    def _count(self, kind: str) -> None:
        self.report.instructions += 1
        self.report.counts[kind] = self.report.counts.get(kind, 0) + 1

    def finish(self) -> CostReport:
        g = self.gen
        spill_ns = 0.0
        if self.report.spill_bytes:
            spill_ns = self.report.spill_bytes / (g.dma_engines * g.dma_engine_gbs)
            self.report.busy_ns["dma"] += spill_ns * g.dma_engines
        busy_dma = self.report.busy_ns["dma"]
        # DMA busy is summed over the 16 engines: report it per engine
        self.report.busy_ns["dma"] = busy_dma / g.dma_engines
        self.report.latency_ns = self.end + spill_ns + self.report.dead_ns + g.launch_ns
        return self.report
