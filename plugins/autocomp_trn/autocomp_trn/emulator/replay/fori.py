"""``nl.fori_loop`` and ``nl.while_loop`` bodies (trace loop kinds ``fori``, ``while``): on device
the body is traced once and the loop index (the while loop's state) is a register, so every iteration runs the same instructions (kinds, engines,
attributes, operand tensors, shapes and dtypes); only the offsets of the accesses may change,
and only affinely in the index. The tracer calls the body once per iteration with a Python int,
so a body that branches on the index in Python yields differing iterations: refused here, from
the trace. Each tile the body allocates has one address on device: ``slot`` names it, so that
the cost model gives every instance of it the same dependency regions (``Replayer``)."""

from __future__ import annotations

import json

from .state import Frame, fail

COMPILED = ("fori", "while")  # the loop kinds whose body is compiled once
RULE = {
    "fori": "a fori_loop body is compiled once: it may not branch on the loop index in Python",
    "while": "a while_loop body is compiled once: it may not branch on the loop state in Python",
}


class _Body:
    """One fori_loop in progress: the first iteration's instruction signature and the offsets
    of the first two, against which each later iteration is checked."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.first: list | None = None
        self.offsets0: list[int] = []
        self.step: list[int] | None = None  # offsets of iteration 1 minus those of iteration 0
        self.sig: list = []
        self.offsets: list[int] = []
        self.local: dict[int, int] = {}  # tensor id -> its allocation's place in the iteration
        self.slots: dict[tuple, int] = {}  # allocation signature -> how many so far this iteration

    def finish(self, k: int) -> None:
        """Iteration ``k`` has ended: compare it with iteration 0."""
        if k == 0:
            self.first, self.offsets0 = self.sig, self.offsets
        elif self.sig != self.first:
            self._refuse(k, "instructions, engines or operands")
        elif k == 1:
            self.step = [b - a for a, b in zip(self.offsets0, self.offsets)]
        elif any(o != a + k * s for o, a, s in zip(self.offsets, self.offsets0, self.step or ())):
            self._refuse(k, "access offsets, which are not affine in the index")
        self.sig, self.offsets, self.local, self.slots = [], [], {}, {}

    def _refuse(self, k: int, what: str) -> None:
        f = self.frame
        fail(
            f"{RULE[f.kind]} (the loop at line {f.line}: iteration {k} differs from iteration 0 in its {what})",
            "err_dynamic_control_flow_not_supported",
            f.line,
        )


class ForiBodies:
    """Follows the replayed events (each already validated by the replay) for every fori_loop
    in progress."""

    def __init__(self) -> None:
        self.open: dict[int, _Body] = {}  # frame id -> body

    def _enclosing(self, frames: list[Frame]) -> list[_Body]:
        return [self.open[f.fid] for f in frames if f.fid in self.open]

    def loop(self, frames: list[Frame]) -> None:
        """A loop began (``frames[-1]``)."""
        f = frames[-1]
        for b in self._enclosing(frames[:-1]):
            b.sig.append(("loop", f.kind, f.n, f.line))
        if f.kind in COMPILED:
            self.open[f.fid] = _Body(f)

    def iteration(self, frames: list[Frame]) -> None:
        f = frames[-1]
        body = self.open.get(f.fid)
        if body is not None and f.it > 0:
            body.finish(f.it - 1)
        for b in self._enclosing(frames[:-1]):
            b.sig.append(("iter", f.it))

    def end(self, frame: Frame, frames: list[Frame]) -> None:
        """``frame`` ended; ``frames``: the loops still open."""
        body = self.open.pop(frame.fid, None)
        if body is not None and frame.n > 0:
            body.finish(frame.n - 1)
        for b in self._enclosing(frames):
            b.sig.append(("end",))

    def alloc(self, e: list, frames: list[Frame]) -> tuple | None:
        """An allocation; returns its slot (its one address, the same every iteration) when a
        fori_loop body makes it, else None."""
        _, tid, shape, dtype, buffer, par_axis, line = e
        decl = (tuple(shape), dtype, buffer, par_axis, line)
        bodies = self._enclosing(frames)
        for b in bodies:
            b.local[tid] = len(b.local)
            b.sig.append(("alloc", *decl))
        if not bodies:
            return None
        inner = bodies[-1]
        nth = inner.slots[decl] = inner.slots.get(decl, -1) + 1
        return (bodies[0].frame.fid, decl, nth)

    def op(self, e: list, frames: list[Frame]) -> None:
        bodies = self._enclosing(frames)
        if not bodies:
            return
        _, name, dsts, srcs, attrs, line = e
        attrs_key = json.dumps(attrs, sort_keys=True, default=str)
        for b in bodies:
            operands = []
            for tid, offset, dims in (*dsts, *srcs):
                where = ("local", b.local[tid]) if tid in b.local else ("outer", tid)
                operands.append((where, tuple(map(tuple, dims))))
                b.offsets.append(offset)
            b.sig.append(("op", name, attrs_key, line, len(dsts), tuple(operands)))
