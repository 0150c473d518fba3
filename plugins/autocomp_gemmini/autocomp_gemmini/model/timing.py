"""Timing model: decoupled load / execute / store units with row-level dependencies.

Each Gemmini command goes to one unit and runs in order within it. A command starts
when (a) the CPU has issued it, (b) its unit is free, and (c) the scratchpad and
accumulator rows it reads were written (RAW), the rows it writes were read and written
by earlier commands (WAR, WAW). It occupies its unit for `occupancy` cycles and its
results land `latency` cycles after that. The CPU stalls when a unit's reservation
station is full, and on a fence until every unit has drained. CPU time is
`minstret * cpi + stalls`. All costs come from `timing.toml`.

A preload that follows a compute in the execute queue runs alongside it, as Gemmini's
ExecuteController does (its `perform_mul_pre` state): the compute's A rows and the next
preload's weight rows stream into the array in the same cycles, so the pair occupies the unit
for the longer of the two. It pairs only if it was waiting in the queue, its operands landed,
when the compute started (otherwise the compute starts alone, as the controller's
`perform_single_mul` does, and the preload follows on its own). The two streams read the
scratchpad in the same cycles, so when the preload's weights and a row the compute reads are in
the same bank (or both in the accumulator) they take turns (the controller's `same_bank` check)
and the pair lasts the sum of the two.
"""

from __future__ import annotations

import collections
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

UNITS = ("load", "ex", "store")
DEFAULT_TOML = Path(__file__).resolve().parent.parent / "timing.toml"


@dataclass
class TimingParams:
    cpi: float = 1.0
    rocc_issue: int = 1
    load_depth: int = 8
    ex_depth: int = 8
    store_depth: int = 4
    dma_latency: int = 40
    bus_bytes_per_cycle: int = 16
    dma_overhead: int = 2
    acc_read_latency: int = 4
    preload_per_row: float = 1.0
    preload_reuse: int = 4
    fill_drain_dims: int = 2
    compute_overhead: int = 0
    min_rows: int = 4
    config: int = 2
    flush_dims: int = 1
    loop_issue: int = 1

    @classmethod
    def from_toml(cls, text: str | None = None) -> TimingParams:
        if text is None:
            text = DEFAULT_TOML.read_text()
        data = tomllib.loads(text)
        return cls(
            cpi=data["cpu"]["cpi"],
            rocc_issue=data["cpu"]["rocc_issue"],
            load_depth=data["queues"]["load_depth"],
            ex_depth=data["queues"]["ex_depth"],
            store_depth=data["queues"]["store_depth"],
            dma_latency=data["dma"]["latency"],
            bus_bytes_per_cycle=data["dma"]["bus_bytes_per_cycle"],
            dma_overhead=data["dma"]["overhead"],
            acc_read_latency=data["dma"]["acc_read_latency"],
            preload_per_row=data["execute"]["preload_per_row"],
            preload_reuse=data["execute"]["preload_reuse"],
            fill_drain_dims=data["execute"]["fill_drain_dims"],
            compute_overhead=data["execute"]["compute_overhead"],
            min_rows=data["execute"]["min_rows"],
            config=data["execute"]["config"],
            flush_dims=data["execute"]["flush_dims"],
            loop_issue=data["loop"]["issue"],
        )


@dataclass
class TimingStats:
    busy: dict[str, float] = field(default_factory=lambda: dict.fromkeys(UNITS, 0.0))
    dep_wait: dict[str, float] = field(default_factory=lambda: dict.fromkeys(UNITS, 0.0))
    commands: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UNITS, 0))
    stall_queue_full: float = 0.0
    stall_fence: float = 0.0
    fences: int = 0


class TimingModel:
    def __init__(
        self, params: TimingParams, spad_rows: int, acc_rows: int, spad_banks: int = 4
    ) -> None:
        self.p = params
        self.bank_rows = max(1, spad_rows // max(1, spad_banks))
        self.unit_free = dict.fromkeys(UNITS, 0.0)
        self.pending = {u: collections.deque() for u in UNITS}  # start times not yet reached
        self.depth = {"load": params.load_depth, "ex": params.ex_depth, "store": params.store_depth}
        self.last_end = 0.0  # completion of the latest-finishing command
        # row -> time its last write lands / its last read is done. Plain lists: a command
        # touches at most a few dozen rows, where list slices beat numpy's per-call overhead.
        self.written = {"spad": [0.0] * spad_rows, "acc": [0.0] * acc_rows}
        self.read_done = {"spad": [0.0] * spad_rows, "acc": [0.0] * acc_rows}
        self.stall = 0.0
        self.instret = 0
        self.stats = TimingStats()
        self._dma_costs: dict[tuple[int, int], tuple[float, float]] = {}
        # (start, occupancy) of the compute just scheduled on the execute unit, while the next
        # execute command may still be a preload that runs alongside it
        self._compute_tail: tuple[float, float, frozenset] | None = None

    # --- CPU side -----------------------------------------------------------------
    def cpu_now(self) -> float:
        return self.instret * self.p.cpi + self.stall

    def set_instret(self, instret: int) -> None:
        self.instret = max(self.instret, instret)

    def issue(self, unit: str) -> float:
        """The CPU issues one command to `unit`: returns the issue time (after any stall)."""
        self.stall += self.p.rocc_issue
        t = self.instret * self.p.cpi + self.stall
        q = self.pending[unit]
        while q and q[0] <= t:
            q.popleft()
        if len(q) >= self.depth[unit]:
            wait = q[0] - t
            self.stall += wait
            self.stats.stall_queue_full += wait
            t += wait
            while q and q[0] <= t:
                q.popleft()
        return t

    def fence(self) -> None:
        t = self.cpu_now()
        self.stats.fences += 1
        if self.last_end > t:
            self.stats.stall_fence += self.last_end - t
            self.stall += self.last_end - t

    # --- accelerator side ---------------------------------------------------------
    def run(
        self,
        unit: str,
        issued: float,
        occupancy: float,
        latency: float,
        reads: tuple = (),
        writes: tuple = (),
    ) -> float:
        """Schedule one command. `reads`/`writes` are (space, first_row, nrows) triples.
        Returns when its results land."""
        if unit == "ex":
            self._compute_tail = None
        free = self.unit_free[unit]
        ready = max(issued, free)
        dep = ready
        written, read_done = self.written, self.read_done
        for space, row, n in reads:
            if n > 0:
                w = max(written[space][row : row + n])
                dep = max(dep, w)
        for space, row, n in writes:
            if n > 0:
                w = max(written[space][row : row + n])
                r = max(read_done[space][row : row + n])
                dep = max(dep, w, r)
        start = dep
        end = start + occupancy
        done = end + latency
        self.unit_free[unit] = end
        self.pending[unit].append(start)
        for space, row, n in reads:
            if n > 0:
                times = read_done[space]
                times[row : row + n] = [max(end, x) for x in times[row : row + n]]
        for space, row, n in writes:
            if n > 0:
                times = written[space]
                times[row : row + n] = [done] * min(n, len(times) - row)
        self.last_end = max(self.last_end, done)
        s = self.stats
        s.busy[unit] += occupancy
        s.dep_wait[unit] += start - ready
        s.commands[unit] += 1
        return done

    def run_compute(
        self, issued: float, occupancy: float, latency: float, reads: tuple = (), writes: tuple = ()
    ) -> float:
        """A COMPUTE on the execute unit (`run`), which the next preload may pair with."""
        done = self.run("ex", issued, occupancy, latency, reads, writes)
        self._compute_tail = (self.unit_free["ex"] - occupancy, occupancy, self._banks(reads))
        return done

    def _banks(self, reads: tuple) -> frozenset:
        """The banks a command's reads start in: a scratchpad bank, or the accumulator."""
        return frozenset(
            -1 if space == "acc" else row // self.bank_rows for space, row, n in reads if n > 0
        )

    def run_preload(
        self, issued: float, occupancy: float, overlapped: float, reads: tuple = ()
    ) -> float:
        """A PRELOAD: `occupancy` cycles on its own, or, right after a compute it was queued
        behind, `overlapped` cycles streamed alongside that compute (the pair lasts the longer
        of the two). Returns when it is done."""
        tail, self._compute_tail = self._compute_tail, None
        if tail is not None:
            start, compute_occ, compute_banks = tail
            ready = issued
            for space, row, n in reads:
                if n > 0:
                    ready = max(ready, *self.written[space][row : row + n])
            if ready <= start:
                # operands in one bank take turns: the pair lasts the sum of the two
                shared = bool(compute_banks & self._banks(reads))
                pair = compute_occ + overlapped if shared else max(compute_occ, overlapped)
                end = max(self.unit_free["ex"], start + pair)
                extra = end - self.unit_free["ex"]
                self.unit_free["ex"] = end
                self.pending["ex"].append(start)
                for space, row, n in reads:
                    if n > 0:
                        times = self.read_done[space]
                        times[row : row + n] = [max(end, x) for x in times[row : row + n]]
                self.last_end = max(self.last_end, end)
                self.stats.busy["ex"] += extra
                self.stats.commands["ex"] += 1
                return end
        return self.run("ex", issued, occupancy, 0, reads=reads)

    # --- costs --------------------------------------------------------------------
    def dma_cost(self, rows: int, row_bytes: int) -> tuple[float, float]:
        cost = self._dma_costs.get((rows, row_bytes))
        if cost is None:
            beats = math.ceil(rows * row_bytes / self.p.bus_bytes_per_cycle)
            cost = self._dma_costs[rows, row_bytes] = (
                self.p.dma_overhead + max(rows, beats),
                self.p.dma_latency,
            )
        return cost

    def compute_cost(self, rows: int, dim: int) -> tuple[float, float]:
        return self.p.compute_overhead + max(rows, self.p.min_rows), self.p.fill_drain_dims * dim

    def preload_cost(self, rows: int, reuse: bool) -> float:
        """Cycles of a preload on its own: `rows` weight rows fed (the controller feeds all DIM
        rows of the block, padding with zeros), or a preload keeping the weights."""
        return self.p.preload_reuse if reuse else max(1.0, rows * self.p.preload_per_row)

    def preload_overlapped(self, rows: int, reuse: bool) -> float:
        """Cycles a preload needs when it streams alongside the compute before it: its weight
        rows, or nothing when it keeps the weights."""
        return 0.0 if reuse else rows * self.p.preload_per_row

    def zero_fill_cost(self, rows: int, blocks: int) -> tuple[float, float]:
        """(occupancy, latency) of an mvin from DRAM address 0: no memory request, one
        DIM-wide block of zeros written per cycle (Gemmini's ZeroWriter)."""
        return self.p.dma_overhead + rows * blocks, 0.0

    def reset_stats(self) -> None:
        self.stats = TimingStats()

    def summary(self) -> dict[str, float]:
        return summarize(self.stats)


def summarize(s: TimingStats) -> dict[str, float]:
    """The statistics as flat numbers, for the results file."""
    out: dict[str, float] = {}
    for u in UNITS:
        out[f"{u}_busy_cycles"] = s.busy[u]
        out[f"{u}_dep_wait_cycles"] = s.dep_wait[u]
        out[f"{u}_commands"] = s.commands[u]
    out["stall_queue_full_cycles"] = s.stall_queue_full
    out["stall_fence_cycles"] = s.stall_fence
    out["fences"] = s.fences
    return out
