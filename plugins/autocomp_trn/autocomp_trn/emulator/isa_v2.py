"""``nki.isa`` as of NKI 0.8 (the current API): every instruction takes its destination first
(``dst``, or ``val_dst``/``idx_dst``), returns nothing, and has no ``dtype=``/``mask=``.

The instructions v1 also has reuse the v1 recording (``isa.py``) with an explicit ``dst``; the
others record their own events. Each call checks what it needs to record a well-formed event
(argument types, the documented enumerations, ranks); the hardware rules are enforced again by
the trusted replay (``replay/ops``), which never trusts what this side recorded."""

from __future__ import annotations

import enum

import numpy as np

from . import dtypes, isa
from .indexing import NkiError
from .recording import ACT_FUNCS, ALU_OPS, check_operand, emit, is_scalar, op_name
from .tracer import PSUM, Tile

# the enums shared with v1 are the same objects
dge_mode, engine, oob_mode, reduce_cmd = isa.dge_mode, isa.engine, isa.oob_mode, isa.reduce_cmd
tensor_engine, vector_engine, scalar_engine = (
    isa.tensor_engine,
    isa.vector_engine,
    isa.scalar_engine,
)
gpsimd_engine, unknown_engine = isa.gpsimd_engine, isa.unknown_engine
_ReduceCmd, _DgeMode, _OobMode, _Engine = reduce_cmd, dge_mode, oob_mode, engine


class nc_version(enum.Enum):
    """The NeuronCore generation: gen2 (Trn1, legacy), gen3 (Trn2), gen4 (Trn3)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


class matmul_perf_mode(enum.Enum):
    none = "none"
    double_row = "double_row"


class dma_engine(enum.Enum):
    unknown = "unknown"
    sync = "sync"
    activation = "activation"
    gpsimd = "gpsimd"


def get_nc_version() -> nc_version:
    """The target's NeuronCore version (``nc_version.gen3`` on Trn2, ``gen4`` on Trn3)."""
    return nc_version(isa.get_nc_version())


def _nc_at_least(version: int, what: str) -> None:
    """A NeuronCore-v``version``+ instruction refused early on an older target (the replay re-checks)."""
    have = isa.get_nc_version()
    if have < version:
        raise NkiError(
            f"{what} is available only on NeuronCore-v{version} and newer; the target "
            f"{isa._generation[0]} is NeuronCore-v{have}",
            "err_unsupported_on_generation",
        )


def _enum(value, kind, what: str):
    """``value`` as a member of ``kind``: raw integers and strings are refused (NKI 0.3)."""
    if not isinstance(value, kind):
        raise NkiError(
            f"{what} takes an nisa.{kind.__name__} member, got {value!r} (raw integers and "
            "strings are refused since NKI 0.3)",
            "err_invalid_enum_value",
        )
    return value


def _dst(x, what: str = "dst") -> Tile:
    if not isinstance(x, Tile):
        raise NkiError(
            f"{what} must be a tile (the current nki.isa writes into an explicit {what})"
        )
    return x


def _alu(op, what: str) -> str:
    name = op_name(op, ALU_OPS, what)
    if name in ("abs_max", "abs_min"):
        _nc_at_least(4, f"nl.{name}")
    return name


def _alu_or_bypass(op, what: str) -> str:
    """An ALU operation, or ``bypass`` (nl.bypass, or None): no operation."""
    return "bypass" if op is None or op == "bypass" else _alu(op, what)


def _operand(value, key: str, srcs: list, attrs: dict) -> None:
    """A scalar (recorded as a float) or a tile (recorded as the next source, ``"ap"``)."""
    if isinstance(value, Tile):
        attrs[key] = "ap"
        srcs.append(value)
    elif is_scalar(value):
        attrs[key] = float(value)
    else:
        check_operand(value, key)


def _reduce_command(cmd, allowed: tuple[str, ...], what: str) -> str:
    name = _enum(cmd, _ReduceCmd, f"{what} reduce_cmd").name
    if name not in allowed:
        raise NkiError(
            f"{what} reduce_cmd={name} is not emulated (this emulator supports "
            f"{', '.join(allowed)})",
            "err_unsupported_api",
        )
    return name


# ---------------------------------------------------------------- TensorE


def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=matmul_perf_mode.none,
    name=None,
):
    """dst (PSUM, fp32 or bf16) = stationary.T @ moving. ``accumulate=None``: the first write to
    an element overwrites, later ones add; True: add to what the PSUM holds (which something must
    have written); False: overwrite."""
    if accumulate is not None and not isinstance(accumulate, bool):
        raise NkiError(f"nc_matmul accumulate= takes None, True or False, got {accumulate!r}")
    if is_transpose:
        raise NkiError(
            "nc_matmul(is_transpose=True) is not emulated: use nisa.nc_transpose",
            "err_unsupported_api",
        )
    if _enum(perf_mode, matmul_perf_mode, "nc_matmul perf_mode") is not matmul_perf_mode.none:
        raise NkiError("nc_matmul perf_mode=double_row is not emulated", "err_unsupported_api")
    isa.nc_matmul(
        stationary,
        moving,
        dst=_dst(dst),
        is_stationary_onezero=is_stationary_onezero,
        is_moving_onezero=is_moving_onezero,
        # True is checked by the replay: the elements it adds to must have been written
        accumulate="auto" if accumulate is None else ("checked" if accumulate else False),
    )


def nc_transpose(dst, data, engine=unknown_engine, name=None):
    """Partition <-> free transpose on TensorE (SBUF -> PSUM, up to 128x128) or VectorE (up to
    32x32); ``engine=unknown`` picks by where ``dst`` lives. ``dst`` keeps ``data``'s dtype."""
    d = _dst(dst)
    _enum(engine, _Engine, "nc_transpose engine")
    if engine is unknown_engine:
        engine = tensor_engine if d.buffer == PSUM else vector_engine
    if isinstance(data, Tile) and d.tensor.dtype != data.tensor.dtype:
        raise NkiError(
            f"nc_transpose dst must have data's dtype ({data.tensor.dtype}), got {d.tensor.dtype}",
            "err_unsupported_dtype",
        )
    isa.nc_transpose(data, dst=d, engine=engine)


# ---------------------------------------------------------------- VectorE / GpSimd / ScalarE


def tensor_tensor(dst, data1, data2, op, engine=unknown_engine, name=None):
    _enum(engine, _Engine, "tensor_tensor engine")
    _alu(op, "tensor_tensor op")
    isa.tensor_tensor(data1, data2, op, dst=_dst(dst), engine=engine)


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=unknown_engine,
    name=None,
):
    _enum(engine, _Engine, "tensor_scalar engine")
    _alu(op0, "op0")
    if op1 is not None:
        _alu(op1, "op1")
    isa.tensor_scalar(
        data, op0, operand0, reverse0, op1, operand1, reverse1, dst=_dst(dst), engine=engine
    )


def scalar_tensor_tensor(
    dst,
    data,
    op0,
    operand0,
    op1,
    operand1,
    reverse0=False,
    reverse1=False,
    reduce_cmd=None,
    reduce_op=None,
    reduce_res=None,
    name=None,
):
    """``(data op0 operand0) op1 operand1`` on VectorE: operand0 a scalar or [P, 1] tile,
    operand1 a tile of data's shape."""
    if reduce_res is not None:
        raise NkiError(
            "scalar_tensor_tensor with reduce_res is not emulated", "err_unsupported_api"
        )
    d, x = _dst(dst), isa._tile(data, "data")
    srcs, attrs = [x], {"op0": _alu(op0, "op0"), "op1": _alu(op1, "op1")}
    _operand(operand0, "operand0", srcs, attrs)
    srcs.append(isa._tile(operand1, "operand1"))
    attrs.update(reverse0=bool(reverse0), reverse1=bool(reverse1))
    emit("scalar_tensor_tensor", [d], srcs, attrs)


def tensor_scalar_reduce(
    dst,
    data,
    op0,
    operand0,
    reduce_op,
    reduce_res=None,
    reverse0=False,
    reduce_cmd=reduce_cmd.reset_reduce,
    reduce_init=None,
    reduce_res_negate=False,
    name=None,
):
    """``dst = data op0 operand0`` and ``reduce_res = reduce_op`` of dst over its free axes (one
    value per partition, negated with ``reduce_res_negate``) on VectorE."""
    d, x = _dst(dst), isa._tile(data, "data")
    _reduce_command(reduce_cmd, ("reset_reduce",), "tensor_scalar_reduce")
    if reduce_init is not None:
        raise NkiError("tensor_scalar_reduce reduce_init is not emulated", "err_unsupported_api")
    srcs, attrs = [x], {"op0": _alu(op0, "op0"), "reverse0": bool(reverse0)}
    _operand(operand0, "operand0", srcs, attrs)
    attrs["reduce_op"] = op_name(reduce_op, ALU_OPS, "reduce_op")
    attrs["negate"] = bool(reduce_res_negate)
    dsts = [d]
    if reduce_res is not None:
        dsts.append(_dst(reduce_res, "reduce_res"))
    emit("tensor_scalar_reduce", dsts, srcs, attrs)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    isa.tensor_reduce(op, data, axis, dst=_dst(dst), negate=negate, keepdims=keepdims)


def tensor_partition_reduce(dst, op, data, name=None):
    isa.tensor_partition_reduce(op, data, dst=_dst(dst))


def tensor_copy(dst, src, engine=unknown_engine, name=None):
    _enum(engine, _Engine, "tensor_copy engine")
    isa.tensor_copy(src, dst=_dst(dst), engine=engine)


def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    engine=scalar_engine,
    name=None,
):
    """``op(data * scale + bias)`` on ScalarE; ``reduce_cmd`` drives its per-partition add
    registers, which ``reduce_res`` receives."""
    if _enum(engine, _Engine, "activation engine") not in (scalar_engine, unknown_engine):
        raise NkiError("activation on GpSimd is not emulated", "err_unsupported_api")
    _reduce_command(reduce_cmd, ("idle", "reset", "reduce", "reset_reduce"), "activation")
    cmd = reduce_cmd
    isa.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        # v1's activation without a command but with reduce_res means reset_reduce
        reduce_cmd=None if cmd is _ReduceCmd.idle and reduce_res is not None else cmd,
        dst=_dst(dst),
        scalar_bias=True,
    )


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """``activation`` with reduce_cmd=reset_reduce into ``reduce_res``."""
    isa.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=_dst(reduce_res, "reduce_res"),
        reduce_cmd=_ReduceCmd.reset_reduce,
        dst=_dst(dst),
        scalar_bias=True,
    )


def activate2(
    dst,
    op,
    data,
    imm0,
    imm1,
    op0,
    op1,
    relu_param=0.0,
    reverse0=False,
    reverse1=False,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    name=None,
):
    """NeuronCore-v4 ScalarE: ``op((data op0 imm0) op1 imm1)``, optionally reduced per partition
    into ``reduce_res`` (reduce_cmd=reset_reduce)."""
    _nc_at_least(4, "nisa.activate2")
    d, x = _dst(dst), isa._tile(data, "data")
    srcs: list = [x]
    attrs: dict = {
        "func": op_name(op, ACT_FUNCS, "activate2 function"),
        "op0": _alu_or_bypass(op0, "op0"),
        "op1": _alu_or_bypass(op1, "op1"),
        "reverse0": bool(reverse0),
        "reverse1": bool(reverse1),
    }
    _operand(imm0, "imm0", srcs, attrs)
    _operand(imm1, "imm1", srcs, attrs)
    if not is_scalar(relu_param):
        raise NkiError(
            "activate2 relu_param must be a scalar in this emulator", "err_unsupported_api"
        )
    attrs["relu_param"] = float(relu_param)
    dsts = [d]
    cmd = _reduce_command(reduce_cmd, ("idle", "reset_reduce"), "activate2")
    if reduce_res is not None:
        if cmd != "reset_reduce":
            raise NkiError("activate2 reduce_res needs reduce_cmd=reduce_cmd.reset_reduce")
        attrs["reduce_op"] = op_name(reduce_op or "add", ALU_OPS, "reduce_op")
        dsts.append(_dst(reduce_res, "reduce_res"))
    emit("activate2", dsts, srcs, attrs)


def exponential(
    dst,
    src,
    max_value=0.0,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    reduce_init=0.0,
    name=None,
):
    """NeuronCore-v4 VectorE: ``dst = exp(src - max_value)`` (max_value a scalar or [P, 1] tile),
    and with reduce_cmd=reset_reduce the per-partition sum of dst into ``reduce_res``."""
    _nc_at_least(4, "nisa.exponential")
    d, x = _dst(dst), isa._tile(src, "src")
    srcs: list = [x]
    attrs: dict = {}
    _operand(max_value, "max_value", srcs, attrs)
    cmd = _reduce_command(reduce_cmd, ("idle", "reset_reduce"), "exponential")
    if not is_scalar(reduce_init) or float(reduce_init) != 0.0:
        raise NkiError("exponential reduce_init must be 0.0 unless reduce_cmd is load_reduce")
    dsts = [d]
    if (reduce_res is None) != (cmd == "idle"):
        raise NkiError("exponential takes reduce_res together with reduce_cmd=reset_reduce")
    if reduce_res is not None:
        dsts.append(_dst(reduce_res, "reduce_res"))
    emit("exponential", dsts, srcs, attrs)


def reciprocal(dst, data, name=None):
    isa.reciprocal(data, dst=_dst(dst))


def tensor_tensor_scan(
    dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None
):
    isa.tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0, reverse1, dst=_dst(dst))


def memset(dst, value, engine=unknown_engine, name=None):
    """Fill ``dst`` with a constant. Strict types (NKI 0.3): a Python int or float, an integral
    value in range for an integer ``dst``."""
    d = _dst(dst)
    _enum(engine, _Engine, "memset engine")
    if not is_scalar(value):
        raise NkiError(
            f"memset value must be a Python int or float, got {type(value).__name__}",
            "err_memset_invalid_value",
        )
    if d.tensor.dtype not in dtypes.FLOATS:
        info = np.iinfo(dtypes.DTYPES[d.tensor.dtype])
        if float(value) != int(value) or not info.min <= int(value) <= info.max:
            raise NkiError(
                f"memset value {value!r} is not a {d.tensor.dtype} value (strict memset types, NKI 0.3)",
                "err_memset_invalid_value",
            )
    isa.memset(value=value, dst=d, engine=engine)


def _pattern(pattern, what: str) -> list[list[int]]:
    """``[[step, num], ...]`` (up to 4 levels) as plain ints."""
    ok = isinstance(pattern, (list, tuple)) and 0 < len(pattern) <= 4
    out = []
    for level in pattern if ok else ():
        if not (isinstance(level, (list, tuple)) and len(level) == 2):
            ok = False
            break
        step, num = level
        if isinstance(step, bool) or isinstance(num, bool):
            ok = False
            break
        if not (isinstance(step, int) and isinstance(num, int) and num > 0):
            ok = False
            break
        out.append([step, num])
    if not ok:
        raise NkiError(
            f"{what} pattern must be up to four [step, num] pairs of ints, got {pattern!r}",
            "err_invalid_access_pattern",
        )
    return out


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NkiError(f"{what} must be an int, got {value!r}")
    return value


def iota(dst, pattern, offset, channel_multiplier=0, name=None):
    """GpSimd: ``dst[p, i] = offset + p * channel_multiplier + sum(step_k * index_k)`` over the
    pattern's nested [step, num] levels (outermost first), dst in SBUF."""
    emit(
        "iota_pattern",
        [_dst(dst)],
        [],
        {
            "pattern": _pattern(pattern, "iota"),
            "offset": _int(offset, "iota offset"),
            "channel_multiplier": _int(channel_multiplier, "iota channel_multiplier"),
        },
    )


#: range_select's default fill: the lowest fp32 (a max reduction of a fully masked row stays finite)
FP32_LOWEST = float(np.finfo(np.float32).min)
_CMP = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")


def affine_select(
    dst,
    pattern,
    offset,
    channel_multiplier,
    on_true_tile,
    on_false_value,
    cmp_op="equal",
    name=None,
):
    """GpSimd: ``dst = on_true_tile`` where ``cmp_op(affine value, 0)``, else ``on_false_value``;
    the affine value is iota's."""
    cmp = op_name(cmp_op, ALU_OPS, "affine_select cmp_op")
    if cmp not in _CMP:
        raise NkiError(f"affine_select cmp_op must be a comparison, got {cmp}")
    if not is_scalar(on_false_value):
        raise NkiError("affine_select on_false_value must be a scalar")
    emit(
        "affine_select_pattern",
        [_dst(dst)],
        [isa._tile(on_true_tile, "on_true_tile")],
        {
            "pattern": _pattern(pattern, "affine_select"),
            "offset": _int(offset, "affine_select offset"),
            "channel_multiplier": _int(channel_multiplier, "affine_select channel_multiplier"),
            "cmp": cmp,
            "on_false": float(on_false_value),
        },
    )


def bn_stats(dst, data, name=None):
    """VectorE: per partition (count, mean, variance*count) of the even and of the odd elements
    of ``data`` (at most 512 per partition): six values."""
    emit("bn_stats", [_dst(dst)], [isa._tile(data, "data")], {})


def bn_aggr(dst, data, name=None):
    """VectorE: (mean, variance) per partition from one or more bn_stats results."""
    emit("bn_aggr", [_dst(dst)], [isa._tile(data, "data")], {})


def max8(dst, src, name=None):
    """VectorE: the 8 largest values of each partition, in descending order."""
    emit("max8", [_dst(dst)], [isa._tile(src, "src")], {})


def nc_find_index8(dst, data, vals, name=None):
    """VectorE: per partition, the index of the first occurrence in ``data`` of each of the 8
    ``vals``; all ones (the dtype's maximum) for a value not found (NKI 0.6)."""
    emit(
        "find_index8",
        [_dst(dst)],
        [isa._tile(data, "data"), isa._tile(vals, "vals")],
        {},
    )


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """VectorE: ``data`` with the first occurrence of each of the 8 ``vals`` replaced by the
    scalar ``imm``; ``dst_idx`` (uint16/uint32), when given, receives their positions."""
    if not is_scalar(imm):
        raise NkiError("nc_match_replace8 imm must be a scalar")
    dsts = [_dst(dst)] + ([] if dst_idx is None else [_dst(dst_idx, "dst_idx")])
    emit(
        "match_replace8",
        dsts,
        [isa._tile(data, "data"), isa._tile(vals, "vals")],
        {"imm": float(imm)},
    )


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """VectorE: ``dst = src`` where ``predicate`` (uint8/16/32) is nonzero (zero with
    ``reverse_pred``, which needs a scalar src); ``dst`` keeps its values elsewhere."""
    d = _dst(dst)
    srcs: list = []
    attrs: dict = {"reverse": bool(reverse_pred)}
    if is_scalar(src):
        if (d.tensor.dtype in dtypes.FLOATS) != isinstance(src, float):
            raise NkiError(
                f"tensor_copy_predicated scalar src {src!r} must be of dst's kind ({d.tensor.dtype}): "
                "a Python float for a float dst, an int for an integer dst",
                "err_unsupported_dtype",
            )
    _operand(src, "src", srcs, attrs)
    srcs.append(isa._tile(predicate, "predicate"))
    emit("copy_predicated", [d], srcs, attrs)


def range_select(
    dst,
    on_true_tile,
    comp_op0,
    comp_op1,
    bound0,
    bound1,
    reduce_cmd=reduce_cmd.idle,
    reduce_res=None,
    reduce_op="maximum",
    range_start=0.0,
    on_false_value=FP32_LOWEST,
    name=None,
):
    """NeuronCore-v3+ VectorE: keep ``on_true_tile`` where ``comp_op0(i + range_start, bound0)``
    and ``comp_op1(i + range_start, bound1)`` hold for the free index i (bounds are [P, 1]
    tiles), ``on_false_value`` elsewhere; ``reduce_res`` receives ``reduce_op`` of the result."""
    _nc_at_least(3, "nisa.range_select")
    cmp0 = op_name(comp_op0, ALU_OPS, "comp_op0")
    cmp1 = op_name(comp_op1, ALU_OPS, "comp_op1")
    if cmp0 not in _CMP or cmp1 not in _CMP:
        raise NkiError(f"range_select comparisons must be comparison ops, got {cmp0}, {cmp1}")
    _reduce_command(reduce_cmd, ("idle", "reset_reduce"), "range_select")
    if not (is_scalar(range_start) and is_scalar(on_false_value)):
        raise NkiError("range_select range_start and on_false_value must be scalars")
    attrs = {
        "cmp0": cmp0,
        "cmp1": cmp1,
        "range_start": float(range_start),
        "on_false": float(on_false_value),
    }
    dsts = [_dst(dst)]
    if reduce_res is not None:
        attrs["reduce_op"] = op_name(reduce_op, ALU_OPS, "reduce_op")
        dsts.append(_dst(reduce_res, "reduce_res"))
    srcs = [isa._tile(on_true_tile, "on_true_tile")]
    srcs += [isa._tile(b, what) for b, what in ((bound0, "bound0"), (bound1, "bound1"))]
    emit("range_select", dsts, srcs, attrs)


def select_reduce(
    dst,
    predicate,
    on_true,
    on_false,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    reduce_op="maximum",
    reverse_pred=False,
    name=None,
):
    """VectorE: ``dst = on_true`` where ``predicate`` (an 8/16-bit integer tile) is nonzero,
    ``on_false`` (a float or [P, 1] tile) elsewhere; ``reduce_res`` receives each partition's max."""
    d = _dst(dst)
    _reduce_command(reduce_cmd, ("idle", "reset_reduce"), "select_reduce")
    if op_name(reduce_op, ALU_OPS, "reduce_op") != "maximum":
        raise NkiError("select_reduce reduces with max only", "err_unsupported_reduce_op")
    if is_scalar(on_false) and not isinstance(on_false, float):
        raise NkiError("select_reduce scalar on_false must be a float (float32)")
    srcs: list = [isa._tile(predicate, "predicate"), isa._tile(on_true, "on_true")]
    attrs: dict = {"reverse": bool(reverse_pred)}
    _operand(on_false, "on_false", srcs, attrs)
    dsts = [d] + ([] if reduce_res is None else [_dst(reduce_res, "reduce_res")])
    emit("select_reduce", dsts, srcs, attrs)


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """VectorE: in each quadrant of 32 partitions, dst partition i takes src partition
    ``shuffle_mask[i]`` (255: keep dst's partition i)."""
    mask = list(shuffle_mask) if isinstance(shuffle_mask, (list, tuple)) else None
    if (
        mask is None
        or len(mask) != 32
        or not all(
            isinstance(m, int) and not isinstance(m, bool) and (0 <= m < 32 or m == 255)
            for m in mask
        )
    ):
        raise NkiError("nc_stream_shuffle shuffle_mask must be 32 ints in [0, 32) or 255")
    emit("stream_shuffle", [_dst(dst)], [isa._tile(src, "src")], {"mask": mask})


def tensor_scalar_cumulative(
    dst, src, op0, op1, imm0, imm1=None, reduce_cmd=reduce_cmd.reset_reduce, name=None
):
    """VectorE: per partition along the free elements, ``reg = op1(src[i] op0 imm0, reg)`` and
    ``dst[i] = reg``; reg starts at op1's identity (reset_reduce) or at ``imm1`` (load_reduce)."""
    cmd = _reduce_command(reduce_cmd, ("reset_reduce", "load_reduce"), "tensor_scalar_cumulative")
    srcs: list = [isa._tile(src, "src")]
    attrs: dict = {"op0": _alu(op0, "op0"), "op1": _alu(op1, "op1"), "reduce_cmd": cmd}
    _operand(imm0, "imm0", srcs, attrs)
    if cmd == "load_reduce":
        if imm1 is None:
            raise NkiError("tensor_scalar_cumulative with load_reduce needs imm1 (the start value)")
        _operand(imm1, "imm1", srcs, attrs)
    emit("tensor_scalar_cumulative", [_dst(dst)], srcs, attrs)


def topk(val_dst, idx_dst, src, n, sorted=False, name=None):
    """GpSimd: in each group of 16 partitions, the k largest of the first ``n`` bf16 elements of
    src's snake layout (element s at partition s % 16, column s // 16) into val_dst, their
    indices into idx_dst (uint32), in the same snake layout; k is val_dst's free size."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise NkiError(f"topk n must be an int, got {n!r}")
    emit(
        "topk",
        [_dst(val_dst, "val_dst"), _dst(idx_dst, "idx_dst")],
        [isa._tile(src, "src")],
        {"n": n, "sorted": bool(sorted)},
    )


# ---------------------------------------------------------------- DMA


def _dge(mode, what: str) -> str:
    name = _enum(mode, _DgeMode, f"{what} dge_mode").name
    if name == "hwdge":
        _nc_at_least(3, f"{what} with dge_mode=hwdge")
    return name


def dma_copy(
    dst,
    src,
    dst_rmw_op=None,
    oob_mode=oob_mode.error,
    dge_mode=dge_mode.unknown,
    engine=unknown_engine,
    name=None,
):
    """DMA HBM <-> SBUF (no DMA from or to PSUM since NKI 0.3). The hardware DGE
    (dge_mode=hwdge) does not cast: src and dst dtypes must match."""
    d, s = _dst(dst), isa._tile(src, "src")
    _enum(oob_mode, _OobMode, "dma_copy oob_mode")
    dge = _dge(dge_mode, "dma_copy")
    for tile, what in ((s, "source"), (d, "destination")):
        if tile.buffer == PSUM:
            raise NkiError(
                f"dma_copy {what} is in PSUM: there is no DMA from or to PSUM since NKI 0.3 "
                "(copy it to SBUF with nisa.tensor_copy)",
                "err_dma_psum",
            )
    if dge == "hwdge" and d.tensor.dtype != s.tensor.dtype:
        raise NkiError(
            f"dma_copy with dge_mode=hwdge cannot cast {s.tensor.dtype} to {d.tensor.dtype}: "
            "the hardware DGE needs matching dtypes (NKI 0.3)",
            "err_dma_dtype_mismatch",
        )
    # the replay re-checks the hardware DGE's rules
    isa.dma_copy(dst=d, src=s, dst_rmw_op=dst_rmw_op, dge=None if dge == "unknown" else dge)


#: the permutations dma_transpose supports, by rank
_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(
    dst, src, axes=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error, name=None
):
    """DMA transpose from HBM or SBUF into SBUF: 2-D [1, 0], 3-D [2, 1, 0], 4-D [3, 1, 2, 0].
    ``axes`` must have exactly src's rank (NKI 0.4), and dst src's rank."""
    d, s = _dst(dst), isa._tile(src, "src")
    _enum(oob_mode, _OobMode, "dma_transpose oob_mode")
    dge = _dge(dge_mode, "dma_transpose")
    if dge not in ("unknown", "hwdge"):
        raise NkiError(f"dma_transpose dge_mode must be unknown or hwdge, got {dge}")
    default = _DMA_TRANSPOSE_AXES.get(s.ndim)
    if default is None:
        raise NkiError(
            f"dma_transpose takes a 2-D, 3-D or 4-D src, got rank {s.ndim}",
            "err_dma_transpose_rank",
        )
    axes = default if axes is None else tuple(axes)
    if len(axes) != s.ndim or d.ndim != s.ndim:
        raise NkiError(
            f"dma_transpose axes {list(axes)} and dst rank {d.ndim} must match src rank {s.ndim} "
            "exactly (NKI 0.4)",
            "err_dma_transpose_rank",
        )
    if axes != default:
        raise NkiError(
            f"dma_transpose supports axes {list(default)} for a rank-{s.ndim} src, got {list(axes)}",
            "err_dma_transpose_rank",
        )
    attrs: dict = {"axes": list(axes)}
    if dge != "unknown":
        attrs["dge"] = dge
    emit("dma_transpose", [d], [s], attrs)


# ---------------------------------------------------------------- gone from the current API


def _retired(name: str, message: str, code: str):
    def call(*_args, **_kw):
        raise NkiError(f"nisa.{name} {message}", code)

    call.__name__ = name
    return call


_RETIRED = {
    "tensor_copy_dynamic_src": (
        "was removed in NKI 0.4: use nisa.tensor_copy or nisa.dma_copy on a dynamic access pattern",
        "err_removed_api",
    ),
    "tensor_copy_dynamic_dst": (
        "was removed in NKI 0.4: use nisa.tensor_copy or nisa.dma_copy on a dynamic access pattern",
        "err_removed_api",
    ),
    "register_alloc": (
        "is deprecated since NKI 0.8: use nisa.scalar_load / nisa.scalar_store (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_load": (
        "is deprecated since NKI 0.8: use nisa.scalar_load (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_store": (
        "is deprecated since NKI 0.8: use nisa.scalar_store (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_move": (
        "is deprecated since NKI 0.8: use NkiScalar arithmetic",
        "err_deprecated_api",
    ),
    "sendrecv": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
    "sendrecv_compute": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
    "core_barrier": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
}
for _name, (_message, _code) in _RETIRED.items():
    globals()[_name] = _retired(_name, _message, _code)

#: the instructions (destination first)
INSTRUCTIONS = (
    "nc_matmul nc_transpose tensor_tensor tensor_scalar scalar_tensor_tensor tensor_scalar_reduce "
    "tensor_reduce tensor_partition_reduce tensor_copy activation activation_reduce activate2 "
    "exponential reciprocal tensor_tensor_scan memset iota affine_select bn_stats bn_aggr max8 "
    "nc_find_index8 nc_match_replace8 tensor_copy_predicated range_select select_reduce "
    "nc_stream_shuffle tensor_scalar_cumulative topk dma_copy dma_transpose"
).split()
#: the enumerations and target queries
ENUMS = (
    "engine tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine reduce_cmd "
    "dge_mode oob_mode matmul_perf_mode dma_engine nc_version get_nc_version"
).split()
#: names the current API removed or moved: calling one says where it went
RETIRED = list(_RETIRED)
PUBLIC = INSTRUCTIONS + ENUMS + RETIRED
