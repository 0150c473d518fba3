"""Loop vectorization: the affine_range loops whose iterations the compiler issues as one
instruction each, found from the trace before it is replayed.

The NKI documentation of ``affine_range`` says the loop lets the compiler "perform additional
loop-level optimizations, such as loop vectorization in current release" (``static_range``:
"no loop-level optimizations"); the original system's conv1d blog (2025-11-17) measured it on
trn1: splitting a 2048-trip loop of [128, 3] ``tensor_tensor``/``tensor_reduce`` pairs into
blocks of 64 took the profile's ``tensor_tensor`` instructions from 65,536 to 512 (and the
kernel from 4.96 to 0.46 ms), while the 2048- and 512-trip loops before it stayed one
instruction per iteration. What the model vectorizes:

- an ``affine_range`` loop with no loop inside it, whose every iteration issues the same
  elementwise engine instructions (same kind and attributes, no accumulation), each operand either
  the same tensor at an offset that moves by a constant step per iteration, or a tile the
  iteration allocates itself (the compiler lays those out side by side);
- only while the fused instruction stays within ``Generation.vector_fmax`` elements per
  partition. No document gives the compiler's limit; the model takes 512 elements, the documented
  per-instruction free-size maximum of the engines' tiles (``nl.tile_size.psum_fmax``,
  ``gemm_moving_fmax``, ``bn_stats_fmax``). The blog's counts fit it (a fused instruction covered
  128 iterations of 3 elements: 384 <= 512 < 768), and so do the conv1d loops it left alone
  (2048 x 3 and 512 x 3 elements).

The fused instruction does the iterations' work at the engine's per-element rate and pays the
fixed per-instruction cost once. Malformed events are skipped here; the replay refuses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: instructions one engine runs element by element over the free axes: iterations of them fuse
ELEMENTWISE = frozenset(
    {
        "tensor_tensor",
        "tensor_scalar",
        "tensor_reduce",
        "tensor_copy",
        "activation",
        "reciprocal",
        "select",
        "memset",
    }
)


@dataclass(frozen=True)
class Lane:
    """One iteration's share of a fused instruction."""

    group: int  # the loop instance: the index of its "loop" event
    position: int  # the instruction's place in the loop body
    trips: int
    last: bool  # in the last iteration: the fused instruction issues here


@dataclass
class _Open:
    index: int
    kind: object
    nested: bool = False
    # per iteration: its op events (index, event) and the tensor ids it allocated
    iterations: list[tuple[list[tuple[int, list]], set[str]]] = field(default_factory=list)


@dataclass
class Vectorization:
    lanes: dict[int, Lane] = field(default_factory=dict)  # op event index -> its lane
    # loops that would be vectorized but for the size limit, and their instructions
    long_loops: int = 0
    long_instructions: int = 0


def vectorized_loops(events: list, excluded: set[int], fmax: int) -> Vectorization:
    """The lanes of every loop of ``events`` the compiler vectorizes. ``excluded``:
    instructions another compiler fusion already takes (never vectorized)."""
    found = Vectorization()
    stack: list[_Open] = []
    for index, e in enumerate(events):
        if not isinstance(e, list) or not e:
            continue
        kind = e[0]
        if kind == "loop" and len(e) > 1:
            if stack:
                stack[-1].nested = True
            stack.append(_Open(index, e[1]))
        elif kind == "iter" and stack:
            stack[-1].iterations.append(([], set()))
        elif kind == "end" and stack:
            loop = stack.pop()
            if loop.kind == "affine" and not loop.nested:
                lanes = _lanes(loop, excluded, fmax)
                found.lanes.update(lanes)
                if not lanes and _lanes(loop, excluded, None):
                    found.long_loops += 1
                    found.long_instructions += sum(len(ops) for ops, _ in loop.iterations)
        elif kind == "alloc" and len(e) > 1 and stack and stack[-1].iterations:
            stack[-1].iterations[-1][1].add(repr(e[1]))
        elif kind == "op" and stack and stack[-1].iterations:
            stack[-1].iterations[-1][0].append((index, e))
    return found


def _lanes(loop: _Open, excluded: set[int], fmax: int | None) -> dict[int, Lane]:
    """The loop's lanes if it vectorizes (``fmax`` None: whatever the fused size), else {}."""
    its = loop.iterations
    trips = len(its)
    if trips < 2 or not its[0][0] or any(len(ops) != len(its[0][0]) for ops, _ in its):
        return {}
    for position, (index0, first) in enumerate(its[0][0]):
        if not _elementwise(first) or index0 in excluded:
            return {}
        if fmax is not None and trips * _free(first) > fmax:
            return {}
        operands0 = [*first[2], *first[3]]
        steps: list[int | None] = [None] * len(operands0)
        for i in range(1, trips):
            index, e = its[i][0][position]
            if index in excluded or not _elementwise(e) or e[1] != first[1] or e[4] != first[4]:
                return {}
            operands = [*e[2], *e[3]]
            if len(operands) != len(operands0) or len(e[2]) != len(first[2]):
                return {}
            for k, (a0, a) in enumerate(zip(operands0, operands)):
                if a[2] != a0[2]:
                    return {}
                local0, local = repr(a0[0]) in its[0][1], repr(a[0]) in its[i][1]
                if local0 != local:
                    return {}
                if local:  # the iteration's own tile: the same place in each
                    if a[1] != a0[1]:
                        return {}
                    continue
                if a[0] != a0[0]:
                    return {}
                if steps[k] is None:
                    steps[k] = a[1] - a0[1]
                if a[1] != a0[1] + i * steps[k]:
                    return {}
    return {
        index: Lane(loop.index, position, trips, i == trips - 1)
        for i, (ops, _) in enumerate(its)
        for position, (index, _e) in enumerate(ops)
    }


def _elementwise(e: list) -> bool:
    if len(e) != 6 or e[1] not in ELEMENTWISE:
        return False
    _, _name, dsts, srcs, attrs, _line = e
    if not (isinstance(dsts, list) and isinstance(srcs, list) and isinstance(attrs, dict)):
        return False
    if attrs.get("acc"):  # an accumulation into one place is a reduction across iterations
        return False
    return all(_ap(a) for a in (*dsts, *srcs))


def _ap(a) -> bool:
    return (
        isinstance(a, list)
        and len(a) == 3
        and isinstance(a[1], int)
        and isinstance(a[2], list)
        and len(a[2]) >= 2
        and all(isinstance(d, list) and len(d) == 2 and isinstance(d[0], int) for d in a[2])
    )


def _free(e: list) -> int:
    """Elements per partition of the instruction's widest operand."""
    return max(math.prod(n for n, _s in a[2][1:]) for a in (*e[2], *e[3]))
