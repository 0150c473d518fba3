"""Data movement in ``nki.language``: loads from and stores to HBM (DMA)."""

from __future__ import annotations

from ..indexing import NkiError
from ..recording import bview, check_operand, dtype_name, emit, fresh, is_scalar
from ..tracer import HBM, PSUM, SBUF, Tile
from .creation import full
from .elementwise import copy


def load(src, *, mask=None, dtype=None, **_kw) -> Tile:
    """HBM -> a new SBUF tile (DMA), optionally cast."""
    check_operand(src, "nl.load source")
    if not isinstance(src, Tile) or src.buffer != HBM:
        raise NkiError("nl.load reads an HBM tensor", "err_unsupported_memory")
    if src.ndim == 1:  # a 1-D [n] load fills n partitions, one element each: an [n, 1] tile
        src = _column(src)
    out = fresh(src.shape, dtype_name(dtype, src), SBUF)
    emit("dma", [out], [src], {}, mask, result=out)
    return out


def _column(x: Tile) -> Tile:
    """A 1-D access [n] as [n, 1] (the partition axis, and one free element)."""
    return Tile(x.tensor, x.offset, [x.dims[0], (1, 1)])


def load_transpose2d(src, *, mask=None, dtype=None, **_kw) -> Tile:
    """HBM [F, P] -> SBUF [P, F] by DMA (much lower bandwidth than nl.load)."""
    if not isinstance(src, Tile) or src.buffer != HBM:
        raise NkiError("nl.load_transpose2d reads an HBM tensor", "err_unsupported_memory")
    if src.ndim != 2:
        raise NkiError("nl.load_transpose2d takes a 2-D HBM tile")
    view = Tile(src.tensor, src.offset, [src.dims[1], src.dims[0]])
    out = fresh(view.shape, dtype_name(dtype, src), SBUF)
    emit("dma", [out], [view], {"transpose": True}, mask, result=out)
    return out


def store(dst, value, *, mask=None, **_kw) -> None:
    """An SBUF tile (or scalar) -> HBM (DMA). A PSUM value is first copied to SBUF."""
    if not isinstance(dst, Tile) or dst.buffer != HBM:
        raise NkiError("nl.store writes an HBM tensor", "err_unsupported_memory")
    check_operand(value, "nl.store value")
    if is_scalar(value):
        value = full(dst.shape, value, dst.dtype)
    if value.buffer == HBM:
        raise NkiError(
            "nl.store value must be an on-chip tile (HBM to HBM copies use nisa.dma_copy)",
            "err_unsupported_memory",
        )
    if value.buffer == PSUM:
        value = copy(value, mask=mask)
    if dst.ndim == 1 and value.ndim == 2 and value.shape[1] == 1:  # an [n, 1] tile to 1-D [n]
        dst = _column(dst)
    emit("dma", [dst], [bview(value, dst.shape)], {}, mask)


def device_print(prefix: str, x) -> None:
    """Prints nothing in this emulator (accepted so kernels need no edits)."""
