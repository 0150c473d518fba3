"""The element-wise math of ``nki.language``: binary ALU operations (VectorE), activation
functions (ScalarE), ``where``, ``copy`` and broadcasting."""

from __future__ import annotations

from .. import hardware
from ..indexing import NkiError
from ..recording import (
    bshape,
    bview,
    check_operand,
    dtype_name,
    emit,
    free_size,
    free_size_of,
    fresh,
    is_scalar,
    onchip,
)
from ..tracer import PSUM, SBUF, Tile


def _partition_broadcast(x: Tile, parts: int) -> Tile:
    """A [1, F] operand used against P partitions: TensorE broadcasts it (a ones-matmul per PSUM bank,
    512 fp32 columns at a time); rows too wide for PSUM are copied out to SBUF bank by bank."""
    free = free_size(x)
    flat_x = x if x.ndim == 2 else x.reshape((1, free))
    chunk = hardware.PSUM_FMAX
    if free * 4 <= 16 * 1024:
        out = fresh((parts, free), "float32", PSUM)
        for c0 in range(0, free, chunk):
            c1 = min(c0 + chunk, free)
            emit("pbroadcast", [out[:, c0:c1]], [flat_x[:, c0:c1]], {})
    else:
        out = fresh((parts, free), x.tensor.dtype, SBUF)
        for c0 in range(0, free, chunk):
            c1 = min(c0 + chunk, free)
            bank = fresh((parts, c1 - c0), "float32", PSUM)
            emit("pbroadcast", [bank], [flat_x[:, c0:c1]], {})
            emit("tensor_copy", [out[:, c0:c1]], [bank], {"engine": "vector"})
    out.tensor.consumed = True
    return out if x.ndim == 2 else out.reshape((parts, *x.shape[1:]))


def _binary(op: str, x, y, dtype=None, mask=None, engine: str = "vector") -> Tile:
    check_operand(x, f"nl.{op} operand")
    check_operand(y, f"nl.{op} operand")
    tiles = [v for v in (x, y) if isinstance(v, Tile)]
    scalars = [v for v in (x, y) if not isinstance(v, Tile)]
    if not tiles:
        raise NkiError(f"nl.{op} needs at least one tile operand")
    for v in tiles:
        onchip(v, f"nl.{op} operand")
    shape = bshape(*(v.shape for v in tiles))
    if len(shape) < 2:
        raise NkiError("tiles are at least 2-D", "err_insufficient_rank")
    # a [1, F] operand against more partitions is broadcast by TensorE
    tiles2 = []
    for v in (x, y):
        if isinstance(v, Tile) and v.shape[0] == 1 and shape[0] > 1 and len(v.shape) == len(shape):
            v = _partition_broadcast(v, shape[0])
        tiles2.append(v)
    x, y = tiles2
    out_dtype = dtype_name(dtype, *tiles, scalars=scalars)
    out = fresh(shape, out_dtype, SBUF)
    if scalars:
        data, scalar = (x, y) if isinstance(x, Tile) else (y, x)
        emit(
            "tensor_scalar",
            [out],
            [bview(data, shape)],
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
        if free_size(v) == 1 and free_size_of(shape) > 1 and v.shape[0] == shape[0]
    ]
    if len(vec) == 1:
        data = x if vec[0] is y else y
        emit(
            "tensor_scalar",
            [out],
            [bview(data, shape), vec[0]],
            {"op0": op, "operand0": "ap", "reverse0": vec[0] is x, "engine": engine},
            mask,
            result=out,
        )
        return out
    emit(
        "tensor_tensor",
        [out],
        [bview(x, shape), bview(y, shape)],
        {"op": op, "engine": engine},
        mask,
        result=out,
    )
    return out


def _unary_act(func: str, x, dtype=None, mask=None) -> Tile:
    check_operand(x, f"nl.{func} operand")
    if not isinstance(x, Tile):
        raise NkiError(f"nl.{func} takes a tile")
    onchip(x, f"nl.{func} operand")
    out = fresh(x.shape, dtype_name(dtype, x), SBUF)
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
        check_operand(v, "nl.where operand")
    if not isinstance(condition, Tile):
        raise NkiError("nl.where condition must be a tile")
    tiles = [v for v in (condition, x, y) if isinstance(v, Tile)]
    for v in tiles:
        onchip(v, "nl.where operand")
    shape = bshape(*(v.shape for v in tiles))
    value_tiles = [v for v in (x, y) if isinstance(v, Tile)]
    out = fresh(
        shape, dtype_name(dtype, *value_tiles, scalars=[v for v in (x, y) if is_scalar(v)]), SBUF
    )
    srcs = [bview(condition, shape)]
    attrs: dict = {"engine": "vector"}
    for key, v in (("x", x), ("y", y)):
        if isinstance(v, Tile):
            attrs[key] = "ap"
            srcs.append(bview(v, shape))
        else:
            attrs[key] = float(v)
    emit("select", [out], srcs, attrs, mask, result=out)
    return out


def copy(x, *, dtype=None, mask=None, **_kw) -> Tile:
    """A copy of a tile in SBUF (VectorE), cast to ``dtype`` if given."""
    check_operand(x, "nl.copy operand")
    if not isinstance(x, Tile):
        raise NkiError("nl.copy takes a tile")
    onchip(x, "nl.copy operand")
    out = fresh(x.shape, dtype_name(dtype, x), SBUF)
    emit("tensor_copy", [out], [x], {"engine": "vector"}, mask, result=out)
    return out


def broadcast_to(x, shape=None, **_kw) -> Tile:
    """A view of ``x`` broadcast to ``shape``; broadcasting the partition dim costs a TensorE op."""
    if not isinstance(x, Tile):
        raise NkiError("nl.broadcast_to takes a tile")
    shape = tuple(shape)
    if x.shape[0] == 1 and shape[0] > 1:
        x = _partition_broadcast(x, shape[0])
    return bview(x, shape)
