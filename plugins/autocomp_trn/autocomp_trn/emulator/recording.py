"""How an NKI call becomes a trace event: the checks every call shares (operands that are tiles
or scalars, on chip; masks; broadcasting; result dtypes), fresh result tiles, and ``emit``, which
records one instruction. ``nki.language`` and ``nki.isa`` both build on this module.

Each call checks what it must to build its result (shapes that cannot combine, wrong argument
types) and records one instruction; the hardware rules (partition limits, memories, engine
operand rules, capacities, loop dependencies) are enforced by the trusted replay, once.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .indexing import Mask, NkiError
from .tracer import HBM, Tile, tracer

#: the functions a kernel may pass as an operation, filled by ``language`` when it is imported
ALU_OPS: dict[int, str] = {}  # id(function) -> ALU op name (nl.add, np.add, ...)
ACT_FUNCS: dict[int, str] = {}  # id(function) -> activation function name


def op_name(fn, table: dict[int, str], what: str) -> str:
    if isinstance(fn, str) and fn in table.values():
        return fn
    name = table.get(id(fn))
    if name is None:
        raise NkiError(f"unsupported {what}: {getattr(fn, '__name__', fn)!r}")
    return name


def is_scalar(x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return isinstance(x, np.generic) and np.ndim(x) == 0


def check_operand(x, what: str = "operand") -> None:
    if isinstance(x, np.ndarray):
        raise NkiError(
            f"{what} is a host NumPy array: kernels cannot move host data to the device; "
            "inputs reach a kernel only as its HBM arguments",
            "err_unsupported_memory",
        )
    if not isinstance(x, Tile) and not is_scalar(x):
        raise NkiError(f"{what} must be a tile or a scalar, got {type(x).__name__}")


def dtype_name(dtype, *tiles, scalars=()) -> str:
    if dtype is not None:
        return dtypes.name_of(dtype)
    names = [t.tensor.dtype for t in tiles]
    out = names[0] if names else "float32"
    for n in names[1:]:
        out = dtypes.promote(out, n)
    if any(isinstance(s, float) for s in scalars):
        out = "float32"  # a weak Python float infers as fp32: bf16_tile * 2.0 is fp32 unless dtype= is given
    return out


def mask_ranges(mask, rank: int):
    if mask is None or mask is True:
        return {}
    if mask is False:
        return None
    if not isinstance(mask, Mask):
        raise NkiError(
            "mask= takes a comparison of nl.arange expressions",
            "err_unsupported_expression_in_mask",
        )
    return mask.axis_ranges(rank)


def restrict(tile: Tile, ranges: dict[int, tuple[int, int]], ref_shape) -> Tile:
    if not ranges or tile.ndim != len(ref_shape):
        return tile
    dims, offset = list(tile.dims), tile.offset
    for a, (lo, hi) in ranges.items():
        n, s = dims[a]
        if n == ref_shape[a]:
            offset += lo * s
            dims[a] = (hi - lo, s)
    return Tile(tile.tensor, offset, dims)


def fresh(shape, dtype: str, buffer: str) -> Tile:
    shape = tuple(shape)
    par_axis = 0 if buffer != HBM else None
    return tracer().new_tensor(shape, dtype, buffer, par_axis).full()


def emit(
    name: str,
    dsts: list[Tile],
    srcs: list[Tile],
    attrs: dict,
    mask=None,
    mask_ref: Tile | None = None,
    result: Tile | None = None,
) -> bool:
    """Record one instruction. Returns False when a mask removes it entirely."""
    t = tracer()
    ref = mask_ref if mask_ref is not None else dsts[0]
    ranges = mask_ranges(mask, ref.ndim)
    if ranges is None:
        return False
    for tile in (*dsts, *srcs):
        for axis, (vlo, vhi) in tile.bounds.items():
            lo, hi = (
                ranges.get(axis, (0, tile.dims[axis][0]))
                if tile.ndim == ref.ndim
                else (0, tile.dims[axis][0])
            )
            if lo < vlo or hi > vhi:
                raise NkiError(
                    f"access out of bounds on axis {axis} (indices {lo}..{hi - 1}, the tensor has "
                    f"{vlo}..{vhi - 1}) without a mask that covers it",
                    "err_tensor_access_out_of_bound",
                )
    if ranges:
        dsts = [restrict(d, ranges, ref.shape) for d in dsts]
        srcs = [restrict(s, ranges, ref.shape) for s in srcs]
    for s in srcs:
        s.tensor.consumed = True
        s.tensor.fresh_event = -1
    index = t.emit(["op", name, [d.ap() for d in dsts], [s.ap() for s in srcs], attrs, t.line()])
    if result is not None:
        result.tensor.fresh_event = index
        result.tensor.consumed = False
        PENDING_RANGES[index] = ranges or {}
    return True


PENDING_RANGES: dict[int, dict] = {}


def onchip(x: Tile, what: str) -> None:
    if x.buffer == HBM:
        raise NkiError(
            f"{what} is in HBM: compute instructions read SBUF/PSUM only (nl.load it first)",
            "err_unsupported_memory",
        )


def bview(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """``tile`` broadcast to ``shape`` with zero strides (free broadcast)."""
    dims = [(1, 0)] * (len(shape) - tile.ndim) + list(tile.dims)
    out = []
    for (n, s), want in zip(dims, shape):
        if n == want:
            out.append((n, s))
        elif n == 1:
            out.append((want, 0))
        else:
            raise NkiError(f"shapes {tile.shape} and {shape} do not broadcast")
    return Tile(tile.tensor, tile.offset, out)


def bshape(*shapes) -> tuple[int, ...]:
    n = max(len(s) for s in shapes)
    out = []
    for axis in range(n):
        sizes = {s[axis - n + len(s)] for s in shapes if axis - n + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise NkiError(f"tile shapes {' and '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def free_size(t: Tile) -> int:
    return free_size_of(t.shape)


def free_size_of(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


class par_dim(int):
    """Marks the partition dimension in a shape: ``(4, nl.par_dim(128), 512)``."""


def shape_and_par(shape) -> tuple[tuple[int, ...], int]:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    pars = [i for i, n in enumerate(shape) if isinstance(n, par_dim)]
    if len(pars) > 1:
        raise NkiError("only one dimension can be nl.par_dim")
    if len(shape) < 2:
        raise NkiError(
            f"tiles are at least 2-D (partition, free), got shape {shape}", "err_insufficient_rank"
        )
    return shape, pars[0] if pars else 0


def reduced_shape(shape, axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    """The shape a reduction over ``axes`` leaves (at least a [P, 1] tile)."""
    out = (
        tuple((1 if a in axes else n) for a, n in enumerate(shape))
        if keepdims
        else tuple(n for a, n in enumerate(shape) if a not in axes)
    )
    if len(out) < 2:  # the result of a full free-dim reduction keeps a [P, 1] tile
        out = (out[0] if out else 1, 1)
    return out
