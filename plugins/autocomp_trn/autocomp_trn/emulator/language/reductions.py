"""The reductions of ``nki.language`` over free axes (VectorE)."""

from __future__ import annotations

from .. import dtypes
from ..indexing import NkiError
from ..recording import check_operand, dtype_name, emit, fresh, onchip, reduced_shape
from ..tracer import SBUF, Tile


def _reduce(
    op: str, x, axis, dtype=None, mask=None, keepdims: bool = False, negate: bool = False
) -> Tile:
    check_operand(x, f"nl.{op} operand")
    if not isinstance(x, Tile):
        raise NkiError("reductions take a tile")
    onchip(x, "reduction operand")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a + x.ndim if a < 0 else a for a in axes)
    if not axes or any(not 0 <= a < x.ndim for a in axes):
        raise NkiError(f"reduction axis {axis} out of range for a tile of rank {x.ndim}")
    if 0 in axes:
        raise NkiError(
            "reductions run over free axes only (not the partition axis 0)",
            "err_unsupported_reduce_axis",
        )
    shape = reduced_shape(x.shape, axes, keepdims)
    out_dtype = dtype_name(dtype, x)
    if op == "mean" and out_dtype not in dtypes.FLOATS:
        out_dtype = "float32"
    out = fresh(shape, out_dtype, SBUF)
    emit(
        "tensor_reduce",
        [out],
        [x],
        {"op": op, "axes": list(axes), "negate": negate, "engine": "vector"},
        mask,
        mask_ref=x,
        result=out,
    )
    return out


def sum(x, axis, *, dtype=None, mask=None, keepdims=False, **_kw) -> Tile:
    """Sum over free axes (VectorE)."""
    return _reduce("add", x, axis, dtype, mask, keepdims)


def max(x, axis, *, dtype=None, mask=None, keepdims=False, **_kw) -> Tile:
    """Maximum over free axes (VectorE)."""
    return _reduce("maximum", x, axis, dtype, mask, keepdims)


def min(x, axis, *, dtype=None, mask=None, keepdims=False, **_kw) -> Tile:
    """Minimum over free axes (VectorE)."""
    return _reduce("minimum", x, axis, dtype, mask, keepdims)


def prod(x, axis, *, dtype=None, mask=None, keepdims=False, **_kw) -> Tile:
    """Product over free axes (VectorE)."""
    return _reduce("multiply", x, axis, dtype, mask, keepdims)


def mean(x, axis, *, dtype=None, mask=None, keepdims=False, **_kw) -> Tile:
    """Mean over free axes (VectorE)."""
    return _reduce("mean", x, axis, dtype, mask, keepdims)
