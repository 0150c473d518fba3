"""A tile's ``dst[...] = value`` and ``dst[...] += value``: the instruction that produced the
value writes (or accumulates into) ``dst`` directly when it can, else a copy or an add does."""

from __future__ import annotations

from ..indexing import NkiError
from ..recording import PENDING_RANGES, bview, check_operand, emit, is_scalar, onchip, restrict
from ..tracer import HBM, PSUM, SBUF, Tile, tracer

_RETARGETABLE = {
    "dma": (SBUF,),
    "matmul": (PSUM,),
    "transpose": (PSUM, SBUF),
    "pbroadcast": (PSUM,),
}


def _retarget_buffers(event: list) -> tuple[str, ...]:
    """Where the instruction that produced a value may write instead of its own result tile (a
    TensorE transpose writes PSUM only: assigned to SBUF, its result is copied there)."""
    if event[1] == "transpose" and event[4].get("engine") == "tensor":
        return (PSUM,)
    return _RETARGETABLE.get(event[1], (SBUF, PSUM))


def assign(dst: Tile, value) -> None:
    """``dst[...] = value``: the producing instruction writes ``dst`` directly when it can."""
    check_operand(value, "the assigned value")
    if dst.buffer == HBM:
        raise NkiError(
            "cannot assign to an HBM tensor with '=': use nl.store(dst, value) or nisa.dma_copy",
            "err_unsupported_memory",
        )
    if is_scalar(value):
        emit("memset", [dst], [], {"value": float(value)})
        return
    t = tracer()
    src = value.tensor
    event = t.events[src.fresh_event] if src.fresh_event >= 0 else None
    if (
        event is not None
        and src.fresh_event == len(t.events) - 1
        and not src.consumed
        and value.is_whole()
        and value.shape == dst.shape
        and dst.buffer in _retarget_buffers(event)
    ):
        ranges = PENDING_RANGES.pop(src.fresh_event, {})
        target = restrict(dst, ranges, dst.shape)
        event[2][0] = target.ap()
        t.events[src.alloc_event] = None
        src.fresh_event = -1
        value.tensor, value.offset, value.dims = dst.tensor, dst.offset, list(dst.dims)
        return
    onchip(value, "the assigned value")
    emit("tensor_copy", [dst], [bview(value, dst.shape)], {"engine": "vector"})


def accumulate(dst: Tile, value, op: str = "add") -> None:
    """``dst[...] += value``: PSUM accumulation on TensorE for a matmul result, else an engine add."""
    check_operand(value, "the accumulated value")
    if dst.buffer == HBM:
        raise NkiError(
            "cannot accumulate into an HBM tensor with '+=': use nisa.dma_copy(..., dst_rmw_op=np.add)",
            "err_unsupported_memory",
        )
    t = tracer()
    if isinstance(value, Tile):
        src = value.tensor
        if (
            src.fresh_event == len(t.events) - 1
            and src.fresh_event >= 0
            and not src.consumed
            and value.is_whole()
            and value.shape == dst.shape
            and dst.buffer == PSUM
            and t.events[src.fresh_event][1] == "matmul"
        ):
            event = t.events[src.fresh_event]
            ranges = PENDING_RANGES.pop(src.fresh_event, {})
            event[2][0] = restrict(dst, ranges, dst.shape).ap()
            event[4]["acc"] = True
            t.events[src.alloc_event] = None
            src.fresh_event = -1
            value.tensor, value.offset, value.dims = dst.tensor, dst.offset, list(dst.dims)
            return
        onchip(value, "the accumulated value")
        emit(
            "tensor_tensor",
            [dst],
            [dst, bview(value, dst.shape)],
            {"op": op, "engine": "vector", "acc": True},
        )
    else:
        emit(
            "tensor_scalar",
            [dst],
            [dst],
            {
                "op0": op,
                "operand0": float(value),
                "reverse0": False,
                "engine": "vector",
                "acc": True,
            },
        )
