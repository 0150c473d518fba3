"""``nki.language`` (v1 and the shared parts of v2), recorded as trace events.

Each call checks what it must to build its result (shapes that cannot combine, wrong argument
types) and records one instruction; the hardware rules (partition limits, memories, engine
operand rules, capacities, loop dependencies) are enforced by the trusted replay, once.
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from . import dtypes, hardware
from .indexing import FALSE_MASK, DynSlice, IndexExpr, Mask, MGrid, NkiError
from .tracer import HBM, PSUM, SBUF, Tile, tracer

# ---------------------------------------------------------------- constants and types


class Buffer(str):
    """A memory location for ``nl.ndarray(..., buffer=...)``."""


sbuf, psum, hbm = Buffer(SBUF), Buffer(PSUM), Buffer(HBM)
shared_hbm = private_hbm = hbm

float32 = dtypes.DTYPES["float32"]
bfloat16 = dtypes.DTYPES["bfloat16"]
float16 = dtypes.DTYPES["float16"]
float8_e4m3 = dtypes.DTYPES["float8_e4m3"]
float8_e5m2 = dtypes.DTYPES["float8_e5m2"]
int8, uint8 = dtypes.DTYPES["int8"], dtypes.DTYPES["uint8"]
int16, uint16 = dtypes.DTYPES["int16"], dtypes.DTYPES["uint16"]
int32, uint32 = dtypes.DTYPES["int32"], dtypes.DTYPES["uint32"]
bool_ = np.dtype(np.bool_)


class par_dim(int):
    """Marks the partition dimension in a shape: ``(4, nl.par_dim(128), 512)``."""


class _TileSize:
    pmax = hardware.PMAX
    psum_fmax = hardware.PSUM_FMAX
    gemm_stationary_fmax = hardware.GEMM_STATIONARY_FMAX
    gemm_moving_fmax = hardware.GEMM_MOVING_FMAX
    bn_stats_fmax = hardware.BN_STATS_FMAX
    psum_num_banks = hardware.PSUM_BANKS
    total_available_sbuf_size = 192 * 1024  # set per generation by the tracing process


tile_size = _TileSize()
mgrid = MGrid()


def arange(start: int, stop: int | None = None) -> IndexExpr:
    if stop is None:
        start, stop = 0, start
    if not isinstance(start, int) or not isinstance(stop, int) or stop <= start:
        raise NkiError(f"nl.arange needs integer bounds with stop > start, got {start}, {stop}")
    return IndexExpr.axis(stop - start, start)


def ds(start: int, size: int) -> DynSlice:
    return DynSlice(start, size)


# ---------------------------------------------------------------- loops


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


# ---------------------------------------------------------------- helpers

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


def _check_operand(x, what: str = "operand") -> None:
    if isinstance(x, np.ndarray):
        raise NkiError(
            f"{what} is a host NumPy array: kernels cannot move host data to the device; "
            "inputs reach a kernel only as its HBM arguments",
            "err_unsupported_memory",
        )
    if not isinstance(x, Tile) and not is_scalar(x):
        raise NkiError(f"{what} must be a tile or a scalar, got {type(x).__name__}")


def _dtype_name(dtype, *tiles, scalars=()) -> str:
    if dtype is not None:
        return dtypes.name_of(dtype)
    names = [t.tensor.dtype for t in tiles]
    out = names[0] if names else "float32"
    for n in names[1:]:
        out = dtypes.promote(out, n)
    if any(isinstance(s, float) for s in scalars):
        out = "float32"  # a weak Python float infers as fp32: bf16_tile * 2.0 is fp32 unless dtype= is given
    return out


def _mask_ranges(mask, rank: int):
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


def _restrict(tile: Tile, ranges: dict[int, tuple[int, int]], ref_shape) -> Tile:
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
    ranges = _mask_ranges(mask, ref.ndim)
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
        dsts = [_restrict(d, ranges, ref.shape) for d in dsts]
        srcs = [_restrict(s, ranges, ref.shape) for s in srcs]
    for s in srcs:
        s.tensor.consumed = True
        s.tensor.fresh_event = -1
    index = t.emit(["op", name, [d.ap() for d in dsts], [s.ap() for s in srcs], attrs, t.line()])
    if result is not None:
        result.tensor.fresh_event = index
        result.tensor.consumed = False
        _PENDING_RANGES[index] = ranges or {}
    return True


_PENDING_RANGES: dict[int, dict] = {}


def _onchip(x: Tile, what: str) -> None:
    if x.buffer == HBM:
        raise NkiError(
            f"{what} is in HBM: compute instructions read SBUF/PSUM only (nl.load it first)",
            "err_unsupported_memory",
        )


def _bview(tile: Tile, shape: tuple[int, ...]) -> Tile:
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


def _bshape(*shapes) -> tuple[int, ...]:
    n = builtins.max(len(s) for s in shapes)
    out = []
    for axis in range(n):
        sizes = {s[axis - n + len(s)] for s in shapes if axis - n + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise NkiError(f"tile shapes {' and '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _partition_broadcast(x: Tile, parts: int) -> Tile:
    """A [1, F] operand used against P partitions: TensorE broadcasts it (a ones-matmul per PSUM bank,
    512 fp32 columns at a time); rows too wide for PSUM are copied out to SBUF bank by bank."""
    free = _free_size(x)
    flat_x = x if x.ndim == 2 else x.reshape((1, free))
    chunk = hardware.PSUM_FMAX
    if free * 4 <= 16 * 1024:
        out = fresh((parts, free), "float32", PSUM)
        for c0 in range(0, free, chunk):
            c1 = builtins.min(c0 + chunk, free)
            emit("pbroadcast", [out[:, c0:c1]], [flat_x[:, c0:c1]], {})
    else:
        out = fresh((parts, free), x.tensor.dtype, SBUF)
        for c0 in range(0, free, chunk):
            c1 = builtins.min(c0 + chunk, free)
            bank = fresh((parts, c1 - c0), "float32", PSUM)
            emit("pbroadcast", [bank], [flat_x[:, c0:c1]], {})
            emit("tensor_copy", [out[:, c0:c1]], [bank], {"engine": "vector"})
    out.tensor.consumed = True
    return out if x.ndim == 2 else out.reshape((parts, *x.shape[1:]))


# ---------------------------------------------------------------- creation


def _shape_and_par(shape) -> tuple[tuple[int, ...], int]:
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


def ndarray(shape, dtype, *, buffer=None, name: str = "", **_ignored) -> Tile:
    buffer = SBUF if buffer is None else buffer
    if buffer not in (SBUF, PSUM, HBM):
        raise NkiError(f"unknown buffer {buffer!r} (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm)")
    if buffer == HBM:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return tracer().new_tensor(shape, dtype, HBM, None, name).full()
    shape, par = _shape_and_par(shape)
    return tracer().new_tensor(shape, dtype, buffer, par, name).full()


def full(shape, fill_value, dtype, *, buffer=None, name: str = "", **_ignored) -> Tile:
    if (buffer or SBUF) == HBM:
        raise NkiError(
            "HBM tensors cannot have init values", "err_hbm_tensor_with_init_value_not_supported"
        )
    out = ndarray(shape, dtype, buffer=buffer, name=name)
    if not is_scalar(fill_value):
        raise NkiError("fill_value must be a scalar")
    blocks = out.shape[: out.tensor.par_axis]
    for index in itertools.product(*(range(n) for n in blocks)):  # block dims: one tile each
        emit("memset", [out[index] if index else out], [], {"value": float(fill_value)})
    return out


def zeros(shape, dtype, *, buffer=None, name: str = "", **kw) -> Tile:
    return full(shape, 0.0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, *, buffer=None, name: str = "", **kw) -> Tile:
    return full(shape, 1.0, dtype, buffer=buffer, name=name)


def zeros_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def ones_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return ones(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def empty_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


# ---------------------------------------------------------------- assignment (used by Tile)


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
    _check_operand(value, "the assigned value")
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
        ranges = _PENDING_RANGES.pop(src.fresh_event, {})
        target = _restrict(dst, ranges, dst.shape)
        event[2][0] = target.ap()
        t.events[src.alloc_event] = None
        src.fresh_event = -1
        value.tensor, value.offset, value.dims = dst.tensor, dst.offset, list(dst.dims)
        return
    _onchip(value, "the assigned value")
    emit("tensor_copy", [dst], [_bview(value, dst.shape)], {"engine": "vector"})


def accumulate(dst: Tile, value, op: str = "add") -> None:
    """``dst[...] += value``: PSUM accumulation on TensorE for a matmul result, else an engine add."""
    _check_operand(value, "the accumulated value")
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
            ranges = _PENDING_RANGES.pop(src.fresh_event, {})
            event[2][0] = _restrict(dst, ranges, dst.shape).ap()
            event[4]["acc"] = True
            t.events[src.alloc_event] = None
            src.fresh_event = -1
            value.tensor, value.offset, value.dims = dst.tensor, dst.offset, list(dst.dims)
            return
        _onchip(value, "the accumulated value")
        emit(
            "tensor_tensor",
            [dst],
            [dst, _bview(value, dst.shape)],
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


# ---------------------------------------------------------------- element-wise math


def _binary(op: str, x, y, dtype=None, mask=None, engine: str = "vector") -> Tile:
    _check_operand(x, f"nl.{op} operand")
    _check_operand(y, f"nl.{op} operand")
    tiles = [v for v in (x, y) if isinstance(v, Tile)]
    scalars = [v for v in (x, y) if not isinstance(v, Tile)]
    if not tiles:
        raise NkiError(f"nl.{op} needs at least one tile operand")
    for v in tiles:
        _onchip(v, f"nl.{op} operand")
    shape = _bshape(*(v.shape for v in tiles))
    if len(shape) < 2:
        raise NkiError("tiles are at least 2-D", "err_insufficient_rank")
    # a [1, F] operand against more partitions is broadcast by TensorE
    tiles2 = []
    for v in (x, y):
        if isinstance(v, Tile) and v.shape[0] == 1 and shape[0] > 1 and len(v.shape) == len(shape):
            v = _partition_broadcast(v, shape[0])
        tiles2.append(v)
    x, y = tiles2
    out_dtype = _dtype_name(dtype, *tiles, scalars=scalars)
    out = fresh(shape, out_dtype, SBUF)
    if scalars:
        data, scalar = (x, y) if isinstance(x, Tile) else (y, x)
        emit(
            "tensor_scalar",
            [out],
            [_bview(data, shape)],
            {
                "op0": op,
                "operand0": float(scalar),
                "reverse0": not isinstance(x, Tile),
                "engine": engine,
            },
            mask,
            result=out,
        )
        return out
    vec = [
        v
        for v in (x, y)
        if _free_size(v) == 1 and _free_size_shape(shape) > 1 and v.shape[0] == shape[0]
    ]
    if len(vec) == 1:
        data = x if vec[0] is y else y
        emit(
            "tensor_scalar",
            [out],
            [_bview(data, shape), vec[0]],
            {"op0": op, "operand0": "ap", "reverse0": vec[0] is x, "engine": engine},
            mask,
            result=out,
        )
        return out
    emit(
        "tensor_tensor",
        [out],
        [_bview(x, shape), _bview(y, shape)],
        {"op": op, "engine": engine},
        mask,
        result=out,
    )
    return out


def _free_size(t: Tile) -> int:
    return _free_size_shape(t.shape)


def _free_size_shape(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def _unary_act(func: str, x, dtype=None, mask=None) -> Tile:
    _check_operand(x, f"nl.{func} operand")
    if not isinstance(x, Tile):
        raise NkiError(f"nl.{func} takes a tile")
    _onchip(x, f"nl.{func} operand")
    out = fresh(x.shape, _dtype_name(dtype, x), SBUF)
    emit("activation", [out], [x], {"func": func, "scale": 1.0}, mask, result=out)
    return out


def _make_binary(op):
    def fn(x, y, *, dtype=None, mask=None, **_kw):
        return _binary(op, x, y, dtype, mask)

    fn.__name__ = op
    fn.__doc__ = (
        f"Element-wise {op} of two tiles, or of a tile and a scalar / [P, 1] vector (VectorE)."
    )
    return fn


def _make_unary(func):
    def fn(x, *, dtype=None, mask=None, **_kw):
        return _unary_act(func, x, dtype, mask)

    fn.__name__ = func
    fn.__doc__ = f"Element-wise {func} on ScalarE."
    return fn


add, subtract, multiply, divide = (
    _make_binary(o) for o in ("add", "subtract", "multiply", "divide")
)
maximum, minimum, power = (_make_binary(o) for o in ("maximum", "minimum", "power"))
equal, not_equal, greater, greater_equal, less, less_equal = (
    _make_binary(o)
    for o in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")
)
bitwise_and, bitwise_or, bitwise_xor = (
    _make_binary(o) for o in ("bitwise_and", "bitwise_or", "bitwise_xor")
)
exp, log, tanh, sqrt, rsqrt, sigmoid = (
    _make_unary(f) for f in ("exp", "log", "tanh", "sqrt", "rsqrt", "sigmoid")
)
relu, gelu, silu, square, abs, reciprocal = (
    _make_unary(f) for f in ("relu", "gelu", "silu", "square", "abs", "reciprocal")
)
sin, cos, softplus, erf = (_make_unary(f) for f in ("sin", "cos", "softplus", "erf"))


def negative(x, *, dtype=None, mask=None, **_kw) -> Tile:
    """-x on VectorE."""
    return _binary("multiply", x, -1.0, dtype or (x.dtype if isinstance(x, Tile) else None), mask)


def where(condition, x, y, *, dtype=None, mask=None, **_kw) -> Tile:
    """Element-wise ``x if condition else y`` (VectorE)."""
    for v in (condition, x, y):
        _check_operand(v, "nl.where operand")
    if not isinstance(condition, Tile):
        raise NkiError("nl.where condition must be a tile")
    tiles = [v for v in (condition, x, y) if isinstance(v, Tile)]
    for v in tiles:
        _onchip(v, "nl.where operand")
    shape = _bshape(*(v.shape for v in tiles))
    value_tiles = [v for v in (x, y) if isinstance(v, Tile)]
    out = fresh(
        shape, _dtype_name(dtype, *value_tiles, scalars=[v for v in (x, y) if is_scalar(v)]), SBUF
    )
    srcs = [_bview(condition, shape)]
    attrs: dict = {"engine": "vector"}
    for key, v in (("x", x), ("y", y)):
        if isinstance(v, Tile):
            attrs[key] = "ap"
            srcs.append(_bview(v, shape))
        else:
            attrs[key] = float(v)
    emit("select", [out], srcs, attrs, mask, result=out)
    return out


def copy(x, *, dtype=None, mask=None, **_kw) -> Tile:
    """A copy of a tile in SBUF (VectorE), cast to ``dtype`` if given."""
    _check_operand(x, "nl.copy operand")
    if not isinstance(x, Tile):
        raise NkiError("nl.copy takes a tile")
    _onchip(x, "nl.copy operand")
    out = fresh(x.shape, _dtype_name(dtype, x), SBUF)
    emit("tensor_copy", [out], [x], {"engine": "vector"}, mask, result=out)
    return out


def broadcast_to(x, shape=None, **_kw) -> Tile:
    """A view of ``x`` broadcast to ``shape``; broadcasting the partition dim costs a TensorE op."""
    if not isinstance(x, Tile):
        raise NkiError("nl.broadcast_to takes a tile")
    shape = tuple(shape)
    if x.shape[0] == 1 and shape[0] > 1:
        x = _partition_broadcast(x, shape[0])
    return _bview(x, shape)


# ---------------------------------------------------------------- reductions


def _reduce(
    op: str, x, axis, dtype=None, mask=None, keepdims: bool = False, negate: bool = False
) -> Tile:
    _check_operand(x, f"nl.{op} operand")
    if not isinstance(x, Tile):
        raise NkiError("reductions take a tile")
    _onchip(x, "reduction operand")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a + x.ndim if a < 0 else a for a in axes)
    if not axes or any(not 0 <= a < x.ndim for a in axes):
        raise NkiError(f"reduction axis {axis} out of range for a tile of rank {x.ndim}")
    if 0 in axes:
        raise NkiError(
            "reductions run over free axes only (not the partition axis 0)",
            "err_unsupported_reduce_axis",
        )
    shape = (
        tuple((1 if a in axes else n) for a, n in enumerate(x.shape))
        if keepdims
        else tuple(n for a, n in enumerate(x.shape) if a not in axes)
    )
    if len(shape) < 2:  # the result of a full free-dim reduction keeps a [P, 1] tile
        shape = (shape[0] if shape else 1, 1)
    out_dtype = _dtype_name(dtype, x)
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


# ---------------------------------------------------------------- data movement


def load(src, *, mask=None, dtype=None, **_kw) -> Tile:
    """HBM -> a new SBUF tile (DMA), optionally cast."""
    _check_operand(src, "nl.load source")
    if not isinstance(src, Tile) or src.buffer != HBM:
        raise NkiError("nl.load reads an HBM tensor", "err_unsupported_memory")
    if src.ndim == 1:  # a 1-D [n] load fills n partitions, one element each: an [n, 1] tile
        src = _column(src)
    out = fresh(src.shape, _dtype_name(dtype, src), SBUF)
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
    out = fresh(view.shape, _dtype_name(dtype, src), SBUF)
    emit("dma", [out], [view], {"transpose": True}, mask, result=out)
    return out


def store(dst, value, *, mask=None, **_kw) -> None:
    """An SBUF tile (or scalar) -> HBM (DMA). A PSUM value is first copied to SBUF."""
    if not isinstance(dst, Tile) or dst.buffer != HBM:
        raise NkiError("nl.store writes an HBM tensor", "err_unsupported_memory")
    _check_operand(value, "nl.store value")
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
    emit("dma", [dst], [_bview(value, dst.shape)], {}, mask)


# ---------------------------------------------------------------- TensorE


def matmul(x, y, *, transpose_x: bool = False, mask=None, **_kw) -> Tile:
    """``x @ y`` into a new PSUM tile (fp32). Without ``transpose_x`` an extra TensorE transpose of
    ``x`` is inserted; with it, ``x`` is already [K, M]."""
    from . import isa

    if not transpose_x:
        xt = transpose(x)
        x = copy(xt)
    return isa.nc_matmul(x, y, mask=mask)


def transpose(x, *, dtype=None, mask=None, **_kw) -> Tile:
    """2-D transpose on TensorE; the result is a PSUM tile."""
    from . import isa

    if not isinstance(x, Tile) or x.ndim != 2:
        raise NkiError("nl.transpose takes a 2-D tile", "err_exceed_max_supported_dimension")
    return isa.nc_transpose(x, dtype=dtype, mask=mask)


def device_print(prefix: str, x) -> None:
    """Prints nothing in this emulator (accepted so kernels need no edits)."""


def _register() -> None:
    pairs = {
        "add": (add, np.add),
        "subtract": (subtract, np.subtract),
        "multiply": (multiply, np.multiply),
        "divide": (divide, np.divide, np.true_divide),
        "maximum": (maximum, np.maximum, max, np.max, np.amax),
        "minimum": (minimum, np.minimum, min, np.min, np.amin),
        "power": (power, np.power),
        "equal": (equal, np.equal),
        "not_equal": (not_equal, np.not_equal),
        "greater": (greater, np.greater),
        "greater_equal": (greater_equal, np.greater_equal),
        "less": (less, np.less),
        "less_equal": (less_equal, np.less_equal),
        "bitwise_and": (bitwise_and, np.bitwise_and),
        "bitwise_or": (bitwise_or, np.bitwise_or),
        "bitwise_xor": (bitwise_xor, np.bitwise_xor),
        "mean": (mean,),
    }
    for name, fns in pairs.items():
        for fn in fns:
            ALU_OPS[id(fn)] = name
    for fn in (sum, np.sum):
        ALU_OPS[id(fn)] = "add"
    for fn in (prod, np.prod):
        ALU_OPS[id(fn)] = "multiply"
    acts = {
        "exp": (exp, np.exp),
        "log": (log, np.log),
        "tanh": (tanh, np.tanh),
        "sqrt": (sqrt, np.sqrt),
        "rsqrt": (rsqrt,),
        "sigmoid": (sigmoid,),
        "relu": (relu,),
        "gelu": (gelu,),
        "silu": (silu,),
        "square": (square, np.square),
        "abs": (abs, np.abs),
        "reciprocal": (reciprocal, np.reciprocal),
        "sin": (sin, np.sin),
        "cos": (cos, np.cos),
        "softplus": (softplus,),
        "erf": (erf,),
        "copy": (copy,),
        "negative": (negative, np.negative),
    }
    for name, fns in acts.items():
        for fn in fns:
            ACT_FUNCS[id(fn)] = name


_register()

#: the public names of ``nki.language`` this emulator implements (the ISA text documents each)
PUBLIC = (
    "ndarray zeros ones full zeros_like ones_like empty_like par_dim arange mgrid ds tile_size "
    "affine_range sequential_range static_range sbuf psum hbm shared_hbm private_hbm float32 bfloat16 "
    "float16 float8_e4m3 float8_e5m2 int8 uint8 int16 uint16 int32 uint32 bool_ load store "
    "load_transpose2d copy broadcast_to matmul transpose add subtract multiply divide maximum minimum "
    "power negative equal not_equal greater greater_equal less less_equal bitwise_and bitwise_or "
    "bitwise_xor where exp log tanh sqrt rsqrt sigmoid relu gelu silu square abs reciprocal sin cos "
    "softplus erf sum max min prod mean device_print"
).split()
__all__ = [*PUBLIC, "FALSE_MASK"]
