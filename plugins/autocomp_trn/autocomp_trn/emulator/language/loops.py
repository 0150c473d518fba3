"""The loops of ``nki.language``: each records a loop event, one event per iteration and an end,
so the replay knows which instructions belong to which iteration."""

from __future__ import annotations

from ..indexing import NkiError
from ..tracer import tracer


def _loop(kind: str, args: tuple):
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise NkiError(
                f"nl.{kind}_range bounds must be Python integers, got {a!r}",
                "err_dynamic_control_flow_not_supported",
            )
    r = range(*args)
    t = tracer()
    t.emit(["loop", kind, len(r), t.line()])
    t.loop_depth += 1
    try:
        for i, value in enumerate(r):
            t.emit(["iter", i])
            yield value
    finally:
        t.loop_depth -= 1
        t.emit(["end"])


def affine_range(*args):
    """Iterations without loop-carried dependencies (except += accumulation)."""
    return _loop("affine", args)


def sequential_range(*args):
    """Ordered iterations that may carry dependencies."""
    return _loop("sequential", args)


def static_range(*args):
    """Fully unrolled at trace time."""
    return _loop("static", args)
