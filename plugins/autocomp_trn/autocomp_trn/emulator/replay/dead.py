"""Dead work: the instructions of a trace whose results nothing ever reads.

The schedule is a greedy list schedule (``cost.Scheduler``: each instruction, in program order,
into the first gap of its engine), and greedy list scheduling is not monotone: an instruction
that only delays another can open a gap that a third one fills earlier, so a kernel with
useless instructions added could be modelled faster than without them (issue 33 red team,
a12: eight dead copies lowered rope's latency 2.4%). Adding work must never lower the modelled
time, so the replay also prices the kernel without its dead instructions and reports the larger
of the two latencies (``loop.Replayer.run``).

An instruction is dead when no tensor it writes is read afterwards by a live instruction and
none is a kernel output (a backward pass, per tensor, so a write later overwritten before any
read still counts as live). Kept live whatever they write: instructions that touch an engine's
reduce registers (their state is read by later instructions, not through a tensor) and those in
a ``fori_loop`` / ``while_loop`` body (compiled once: every iteration runs the same body).
"""

from __future__ import annotations

#: loop kinds whose body exists once on the device
ONCE = ("fori", "while")


def dead_instructions(events: list, outputs: list[int]) -> set[int]:
    """The indices of the trace's dead instruction events (the trace is validated by the
    replay that ran before: what does not parse here is kept)."""
    kept = _in_compiled_once_bodies(events)
    needed = set(outputs)
    dead: set[int] = set()
    for index in range(len(events) - 1, -1, -1):
        e = events[index]
        if not (isinstance(e, list) and len(e) == 6 and e[0] == "op"):
            continue
        dsts, srcs, attrs = _tensors(e[2]), _tensors(e[3]), e[4]
        registers = isinstance(attrs, dict) and any("reduce" in str(k) for k in attrs)
        if dsts and not dsts & needed and not registers and index not in kept:
            dead.add(index)
            continue
        needed |= srcs | dsts
    return dead


def _tensors(aps) -> set[int]:
    if not isinstance(aps, list):
        return set()
    return {ap[0] for ap in aps if isinstance(ap, list) and ap and isinstance(ap[0], int)}


def _in_compiled_once_bodies(events: list) -> set[int]:
    kinds: list[str] = []
    inside: set[int] = set()
    for index, e in enumerate(events):
        if not isinstance(e, list) or not e:
            continue
        if e[0] == "loop" and len(e) > 1:
            kinds.append(str(e[1]))
        elif e[0] == "end" and kinds:
            kinds.pop()
        elif e[0] == "op" and any(k in ONCE for k in kinds):
            inside.add(index)
    return inside
