"""``nki.isa`` instructions. v1 calls return a new tile; the v2 wrappers (``isa_v2.py``) pass
an explicit ``dst``. Engine operand rules are enforced by the trusted replay."""

from __future__ import annotations

import enum

from .indexing import IndexExpr, Mask, NkiError
from .recording import (
    ACT_FUNCS,
    ALU_OPS,
    bview,
    check_operand,
    dtype_name,
    emit,
    fresh,
    is_scalar,
    op_name,
    reduced_shape,
    shape_and_par,
)
from .tracer import PSUM, SBUF, Tile


class engine(enum.Enum):
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    unknown = "unknown"


tensor_engine, vector_engine, scalar_engine = engine.tensor, engine.vector, engine.scalar
gpsimd_engine, unknown_engine = engine.gpsimd, engine.unknown


class reduce_cmd(enum.Enum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4  # the current API: load a value into the registers, then reduce onto it


_ReduceCmd = reduce_cmd  # (``activation``'s parameter of the same name hides the class)


class dge_mode(enum.Enum):
    none = 0
    swdge = 1
    hwdge = 2
    unknown = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


NC_VERSION = {"trn1": 2, "trn2": 3, "trn3": 4}
_generation = ["trn1"]


def get_nc_version() -> int:
    """The NeuronCore version of the target (2 on Trn1, 3 on Trn2, 4 on Trn3)."""
    return NC_VERSION[_generation[0]]


def _engine(value, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, engine):
        return default if value is engine.unknown else value.value
    raise NkiError(f"engine= takes an nisa engine, got {value!r}")


def _tile(x, what: str) -> Tile:
    check_operand(x, what)
    if not isinstance(x, Tile):
        raise NkiError(f"{what} must be a tile")
    return x


def _out(dst, shape, dtype: str, buffer: str = SBUF):
    """``dst`` (v2) or a new tile (v1); returns (tile, is_new)."""
    if dst is not None:
        if not isinstance(dst, Tile):
            raise NkiError("dst must be a tile")
        return dst, False
    return fresh(shape, dtype, buffer), True


def _finish(name, out, new, srcs, attrs, mask=None, mask_ref=None, extra_dsts=()):
    emit(name, [out, *extra_dsts], srcs, attrs, mask, mask_ref, result=out if new else None)
    return out if new else None


def nc_matmul(
    stationary,
    moving,
    *,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    tile_position=(),
    tile_size=(),
    mask=None,
    dst=None,
    accumulate=False,
    perf=None,
    transpose=False,
    **_kw,
):
    """``stationary.T @ moving`` on TensorE into PSUM (fp32): stationary [K, M], moving [K, N]."""
    s, m = _tile(stationary, "stationary"), _tile(moving, "moving")
    if s.ndim != 2 or m.ndim != 2:
        raise NkiError("nc_matmul operands are 2-D tiles [K, M] and [K, N]")
    if dst is None:
        # v1: TensorE reads SBUF only, and the compiler stages an operand a kernel holds in PSUM
        # (a TensorE transpose's result, say) through SBUF, as it does for nl.store; with v2's
        # explicit destinations nothing is inserted and the replay refuses a PSUM operand
        s, m = (tensor_copy(x) if x.buffer == PSUM else x for x in (s, m))
    if (
        dst is None and s.shape[1] > 128
    ):  # the result tile could not even exist (the replay re-checks)
        raise NkiError(
            f"matmul stationary free size {s.shape[1]} exceeds gemm_stationary_fmax 128",
            "err_size_of_dimension_exceed_arch_limit",
        )
    out, new = _out(dst, (s.shape[1], m.shape[1]), "float32", PSUM)
    attrs = {"acc": accumulate} if accumulate else {}
    # which operands the kernel says hold only 0 and 1 (the replay checks the data)
    onezero = [
        n
        for n, hint in (("stationary", is_stationary_onezero), ("moving", is_moving_onezero))
        if hint
    ]
    if onezero:
        attrs["onezero"] = onezero
    if perf:  # the current API's perf_mode (the replay checks the operands allow it)
        attrs["perf"] = perf
    if transpose:  # the current API's is_transpose (v1 ignores is_transpose, as before)
        attrs["transpose"] = True
    return _finish("matmul", out, new, [s, m], attrs, mask)


def nc_transpose(data, *, mask=None, dtype=None, engine=None, dst=None, **_kw):
    """Partition <-> free transpose: TensorE (up to 128x128, into PSUM) or VectorE (up to 32x32, SBUF)."""
    x = _tile(data, "data")
    if x.ndim != 2:
        raise NkiError("nc_transpose takes a 2-D tile", "err_exceed_max_supported_dimension")
    eng = _engine(engine, "tensor" if max(x.shape) > 32 else "vector")
    if dst is None and eng == "vector" and max(x.shape) > 32:
        # v1: the engine is a choice only where both fit (VectorE holds 32x32); hardware-verified
        # programs ask VectorE for 128x64 and get the transpose, which only TensorE can do
        eng = "tensor"
    buffer = PSUM if eng == "tensor" else SBUF
    out, new = _out(
        dst,
        (x.shape[1], x.shape[0]),
        dtype_name(dtype, x) if eng != "tensor" else dtype_name(dtype or "float32"),
        buffer,
    )
    return _finish("transpose", out, new, [x], {"engine": eng}, mask)


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=None, dst=None, **_kw):
    """Element-wise ``op(data1, data2)`` on VectorE (GpSimd for power): same shapes."""
    a, b = _tile(data1, "data1"), _tile(data2, "data2")
    name = op_name(op, ALU_OPS, "tensor_tensor op")
    if a.shape != b.shape:
        raise NkiError(
            f"tensor_tensor operands differ in shape: {a.shape} vs {b.shape}",
            "err_num_partition_mismatch",
        )
    out, new = _out(dst, a.shape, dtype_name(dtype, a, b))
    return _finish(
        "tensor_tensor",
        out,
        new,
        [a, b],
        {
            "op": name,
            "engine": _engine(engine, "gpsimd" if name == "power" else "vector"),
            "strict": True,
        },
        mask,
    )


def tensor_scalar(
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    *,
    dtype=None,
    mask=None,
    engine=None,
    dst=None,
    **_kw,
):
    """``(data op0 operand0) op1 operand1``; operands are scalars or [P, 1] tiles. Two ops cost one."""
    x = _tile(data, "data")
    srcs = [x]
    attrs: dict = {
        "op0": op_name(op0, ALU_OPS, "op0"),
        "reverse0": bool(reverse0),
        "engine": _engine(engine, "vector"),
    }
    for key, operand in (("operand0", operand0), ("operand1", operand1)):
        if key == "operand1" and op1 is None:
            break
        if isinstance(operand, Tile):
            attrs[key] = "ap"
            srcs.append(operand)
        elif is_scalar(operand):
            attrs[key] = float(operand)
        else:
            check_operand(operand, key)
    if op1 is not None:
        attrs["op1"], attrs["reverse1"] = op_name(op1, ALU_OPS, "op1"), bool(reverse1)
    out, new = _out(dst, x.shape, dtype_name(dtype, x))
    return _finish("tensor_scalar", out, new, srcs, attrs, mask)


def tensor_reduce(
    op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, dst=None, **_kw
):
    """Reduce free axes (consecutive, ending at the last) on VectorE."""
    x = _tile(data, "data")
    name = op_name(op, ALU_OPS, "tensor_reduce op")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a + x.ndim if a < 0 else a for a in axes)
    if 0 in axes:
        raise NkiError(
            "reductions run over free axes only (not the partition axis 0)",
            "err_unsupported_reduce_axis",
        )
    shape = reduced_shape(x.shape, axes, keepdims)
    out, new = _out(dst, shape, dtype_name(dtype, x))
    return _finish(
        "tensor_reduce",
        out,
        new,
        [x],
        {
            "op": name,
            "axes": list(axes),
            "negate": bool(negate),
            "engine": "vector",
            "strict": True,
        },
        mask,
        mask_ref=x,
    )


def tensor_copy(src, *, mask=None, dtype=None, engine=None, dst=None, **_kw):
    """Copy (with cast) on VectorE, ScalarE or GpSimd."""
    x = _tile(src, "src")
    out, new = _out(dst, x.shape, dtype_name(dtype, x))
    return _finish("tensor_copy", out, new, [x], {"engine": _engine(engine, "vector")}, mask)


def _act_operand(
    value, what: str, srcs: list, attrs: dict, key: str, scalar_bias: bool = False
) -> None:
    """An activation's bias or scale: a [P, 1] tile, or a scalar (a scalar bias only in the
    current API, ``scalar_bias``)."""
    if value is None:
        return
    if isinstance(value, Tile):
        attrs[key] = "ap"
        srcs.append(value)
    elif is_scalar(value) and (key == "scale" or scalar_bias):
        attrs[key] = float(value)
    else:
        raise NkiError(
            f"activation {what} must be a [P, 1] tile" + (" or a scalar" if key == "scale" else ""),
            f"err_activation_{what}_invalid_type",
        )


def activation(
    op,
    data,
    *,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=None,
    mask=None,
    dtype=None,
    dst=None,
    scalar_bias=False,
    **_kw,
):
    """``op(data * scale + bias)`` on ScalarE. The add-reduction of the result along the free axis
    goes into ScalarE's 128 per-partition registers as ``reduce_cmd`` says (reset: zero them;
    reduce: add to them; reset_reduce: replace them); ``reduce_res`` ([P, 1]) receives the
    registers after the instruction. Without ``reduce_cmd``, ``reduce_res`` means reset_reduce
    (``activation_reduce``)."""
    x = _tile(data, "data")
    func = op_name(op, ACT_FUNCS, "activation function")
    srcs, attrs = [x], {"func": func, "scale": 1.0}
    _act_operand(bias, "bias", srcs, attrs, "bias", scalar_bias)
    _act_operand(scale, "scale", srcs, attrs, "scale")
    extra = []
    if reduce_cmd is not None:
        if not isinstance(reduce_cmd, _ReduceCmd):
            raise NkiError(f"reduce_cmd= takes an nisa.reduce_cmd, got {reduce_cmd!r}")
        if reduce_cmd is _ReduceCmd.load_reduce:
            raise NkiError(
                "activation reduce_cmd=load_reduce is not emulated", "err_unsupported_api"
            )
        attrs["reduce_cmd"] = reduce_cmd.name
    if reduce_op is not None and op_name(reduce_op, ALU_OPS, "reduce_op") != "add":
        raise NkiError(
            "activation reduces with add only on this NeuronCore", "err_unsupported_reduce_op"
        )
    if reduce_res is not None:
        if not isinstance(reduce_res, Tile):
            raise NkiError("reduce_res must be a [P, 1] tile")
        attrs["reduce"] = "add"
        extra = [reduce_res]
    out, new = _out(dst, x.shape, dtype_name(dtype, x))
    return _finish("activation", out, new, srcs, attrs, mask, extra_dsts=extra)


def activation_reduce(
    op,
    data,
    *,
    reduce_op=None,
    reduce_res=None,
    bias=None,
    scale=1.0,
    mask=None,
    dtype=None,
    dst=None,
    **_kw,
):
    """``activation`` that also add-reduces its result into ``reduce_res``."""
    if reduce_res is None:
        raise NkiError("activation_reduce needs reduce_res")
    return activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        mask=mask,
        dtype=dtype,
        dst=dst,
    )


def reciprocal(data, *, dtype=None, mask=None, dst=None, **_kw):
    """1/x on VectorE (precise, 8x the cost of a ScalarE activation)."""
    x = _tile(data, "data")
    out, new = _out(dst, x.shape, dtype_name(dtype, x))
    return _finish("reciprocal", out, new, [x], {"engine": "vector"}, mask)


def memset(shape=None, value=0.0, dtype=None, *, mask=None, engine=None, dst=None, **_kw):
    """A new tile filled with ``value`` (VectorE or GpSimd)."""
    if not is_scalar(value):
        raise NkiError("memset value must be a scalar")
    if dst is None:
        shape, _ = shape_and_par(shape)
    out, new = _out(dst, shape, dtype_name(dtype or "float32"))
    return _finish(
        "memset", out, new, [], {"value": float(value), "engine": _engine(engine, "vector")}, mask
    )


def iota(expr, dtype, *, mask=None, dst=None, **_kw):
    """Materialize an affine nl.arange expression as values (GpSimd)."""
    if not isinstance(expr, IndexExpr):
        raise NkiError("iota takes an nl.arange / nl.mgrid expression")
    if expr.ndim < 2:
        raise NkiError("iota expression must be at least 2-D", "err_1d_arange_not_supported")
    out, new = _out(dst, expr.shape, dtype_name(dtype))
    return _finish(
        "iota",
        out,
        new,
        [],
        {"coeffs": list(expr.coeffs), "const": expr.const, "engine": "gpsimd"},
        mask,
    )


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, dst=None, **_kw):
    """Per element ``pred ? on_true_tile : on_false_value`` for one affine comparison (GpSimd)."""
    if not isinstance(pred, Mask) or len(pred.terms) != 1:
        raise NkiError(
            "affine_select takes a single affine comparison of nl.arange expressions (no &)",
            "err_unsupported_expression_in_mask",
        )
    x = _tile(on_true_tile, "on_true_tile")
    if not is_scalar(on_false_value):
        raise NkiError("on_false_value must be a scalar")
    shape, coeffs, const, op = pred.terms[0]
    if len(shape) != x.ndim:
        raise NkiError(
            "affine_select predicate rank differs from the tile's",
            "err_unsupported_expression_in_mask",
        )
    out, new = _out(dst, x.shape, dtype_name(dtype, x))
    return _finish(
        "affine_select",
        out,
        new,
        [x],
        {
            "coeffs": list(coeffs),
            "const": const,
            "cmp": op,
            "on_false": float(on_false_value),
            "engine": "gpsimd",
        },
        mask,
    )


def tensor_tensor_scan(
    data0,
    data1,
    initial,
    op0,
    op1,
    reverse0=False,
    reverse1=False,
    *,
    dtype=None,
    mask=None,
    dst=None,
    **_kw,
):
    """Per partition along the free axis: ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])``, r[-1] = initial."""
    a, b = _tile(data0, "data0"), _tile(data1, "data1")
    if a.shape != b.shape:
        raise NkiError(f"tensor_tensor_scan operands differ in shape: {a.shape} vs {b.shape}")
    srcs, attrs = (
        [a, b],
        {
            "op0": op_name(op0, ALU_OPS, "op0"),
            "op1": op_name(op1, ALU_OPS, "op1"),
            "reverse0": bool(reverse0),
            "reverse1": bool(reverse1),
            "engine": "vector",
        },
    )
    if isinstance(initial, Tile):
        attrs["initial"] = "ap"
        srcs.append(initial)
    elif is_scalar(initial):
        attrs["initial"] = float(initial)
    else:
        check_operand(initial, "initial")
    out, new = _out(dst, a.shape, dtype_name(dtype, a, b))
    return _finish("scan", out, new, srcs, attrs, mask)


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, dst=None, **_kw):
    """Reduce across partitions on GpSimd: [P, F] -> [1, F]."""
    x = _tile(data, "data")
    out, new = _out(dst, (1, *x.shape[1:]), dtype_name(dtype, x))
    return _finish(
        "partition_reduce",
        out,
        new,
        [x],
        {"op": op_name(op, ALU_OPS, "op"), "engine": "gpsimd"},
        mask,
        mask_ref=x,
    )


def dma_copy(
    *, dst, src, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, dge=None, **_kw
):
    """DMA copy HBM<->SBUF, HBM->HBM or SBUF->SBUF (with cast); ``dst_rmw_op=np.add`` accumulates.
    ``dge``: the descriptor generation the current API asked for ("hwdge", "swdge", "none")."""
    d, s = _tile(dst, "dst"), _tile(src, "src")
    attrs: dict = {"dge": dge} if dge else {}
    if dst_rmw_op is not None:
        if op_name(dst_rmw_op, ALU_OPS, "dst_rmw_op") != "add":
            raise NkiError("dma_copy dst_rmw_op supports np.add only")
        attrs["acc"] = True
    if d.shape != s.shape:
        s = bview(s, d.shape)
    emit("dma", [d], [s], attrs, mask)


PUBLIC = (
    "nc_matmul nc_transpose tensor_tensor tensor_scalar tensor_reduce tensor_copy activation "
    "activation_reduce reciprocal memset iota affine_select tensor_tensor_scan tensor_partition_reduce "
    "dma_copy engine tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine reduce_cmd "
    "dge_mode oob_mode get_nc_version"
).split()
