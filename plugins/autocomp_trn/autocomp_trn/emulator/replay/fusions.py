"""The instructions the compiler merges, found from the trace's order before it is replayed."""

from __future__ import annotations

from dataclasses import dataclass, field


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
