"""What the cycle model (costmodel.py) does not model, and whether it matters for this kernel.

Each limit is true of costmodel.py as it stands, and each has a detector that reads only the
timed call's executed instructions (Spike's log) and the model's report for them. The feedback
lists the limits that fired, so the search and the user know where the modelled number is least
certain; the evaluation's `verification["model_limits"]` records the same list. The detectors
are deterministic and each text is one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from autocomp_core import applying_limits, limits_section

from .costmodel import CoreParams, ModelReport
from .trace import Insn

#: A detector fires when what it measures reaches this share of the modelled cycles.
SHARE_MEMORY_PIPES = 0.50
SHARE_SCALAR = 0.50
#: The memory-order detector compares addresses by aligned 8-byte words.
WORD_SHIFT = 3

_SCALAR_LOAD = re.compile(r"^(c\.)?f?l[bhwd]u?(sp)?$")
_SCALAR_BRANCH = re.compile(r"^(c\.)?(b[a-z]*|j|jal|jalr|jr|ret)$")


def _memory_hits(insns: Sequence[Insn], report: ModelReport, p: CoreParams) -> str | None:
    cycles = max(report.cycles, 1)
    busy = {pipe: report.pipe_busy.get(pipe, 0) / cycles for pipe in ("load", "store")}
    pipe = max(busy, key=lambda name: busy[name])
    if busy[pipe] < SHARE_MEMORY_PIPES:
        return None
    lines: set[int] = set()
    for insn in insns:
        if insn.is_vector:
            lines.update(a // p.line_bytes for a in insn.mem_addrs)
        lines.update(a // p.line_bytes for a, _ in insn.stores)
    return (
        f"memory: the vector {pipe} pipe is busy {100 * busy[pipe]:.0f}% of the modelled cycles "
        f"and the call touches {len(lines) * p.line_bytes / 1024:.1f} KiB ({len(lines)} "
        f"{p.line_bytes}-byte lines, scalar loads not counted). The model charges every access "
        f"as a cache hit ({p.lat_load}-cycle load latency, {p.mem_bits} bits a cycle, at least a "
        "cycle a line): cache misses, memory latency and DRAM bandwidth are not modelled, so a "
        "kernel this bound by memory may be slower on the hardware."
    )


def _scalar_flat_cost(insns: Sequence[Insn], report: ModelReport, p: CoreParams) -> str | None:
    """Fires when the scalar instructions alone, at their cycle each, make half the modelled time."""
    scalar = [insn.mnemonic for insn in insns if not insn.is_vector]
    cycles = max(report.cycles, 1)
    if len(scalar) < SHARE_SCALAR * cycles:
        return None
    loads = sum(1 for m in scalar if _SCALAR_LOAD.match(m))
    branches = sum(1 for m in scalar if _SCALAR_BRANCH.match(m))
    return (
        f"scalar code: {len(scalar)} scalar instructions, {loads} of them loads and {branches} "
        f"branches or jumps, take at least {100 * min(len(scalar), cycles) / cycles:.0f}% of the "
        "modelled cycles. The model charges each one cycle in order (multiply and divide more), "
        "with no load-use latency, cache miss or branch misprediction."
    )


def _memory_order(insns: Sequence[Insn], report: ModelReport, p: CoreParams) -> str | None:
    """Decoupled cores only: there the load and store pipes run independently in the model, which
    orders vector instructions through their registers only."""
    if not p.decoupled:
        return None
    written: set[int] = set()
    dependent = 0
    for insn in insns:
        if not insn.is_vector:
            continue
        if insn.stores:
            for addr, data in insn.stores:
                last = (addr + max(len(data), 1) - 1) >> WORD_SHIFT
                written.update(range(addr >> WORD_SHIFT, last + 1))
        elif insn.mem_addrs and written:
            if any(a >> WORD_SHIFT in written for a in insn.mem_addrs):
                dependent += 1
    if not dependent:
        return None
    return (
        f"memory order: {dependent} vector loads read memory an earlier vector store of the call "
        "wrote (a spill, or another pass over an output). The model orders vector instructions "
        "through their registers only, so such a load may start before that store has finished, "
        "where the hardware must order the two (the load sees the stored data)."
    )


#: (name recorded in verification["model_limits"], detector), in the order the feedback lists them
LIMITS: tuple[tuple[str, Callable[[Sequence[Insn], ModelReport, CoreParams], str | None]], ...] = (
    ("memory_hits_only", _memory_hits),
    ("scalar_flat_cost", _scalar_flat_cost),
    ("memory_order", _memory_order),
)


def applying(insns: Sequence[Insn], report: ModelReport, p: CoreParams) -> list[dict[str, str]]:
    """The limits that matter for this call: [{"limit": name, "detail": one line}, ...]."""
    return applying_limits(LIMITS, insns, report, p)


section = limits_section  # the feedback's section on them, as every backend writes it
