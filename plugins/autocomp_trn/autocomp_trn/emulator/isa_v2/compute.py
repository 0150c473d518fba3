"""The current ``nki.isa``'s compute instructions: TensorE (nc_matmul, nc_transpose), VectorE,
ScalarE and GpSimd element-wise and reduction instructions, and memset. The ones v1 also has
record through the v1 implementations (``isa.py``) with an explicit ``dst``."""

from __future__ import annotations

import numpy as np

from .. import dtypes, isa
from ..indexing import NkiError
from ..recording import ACT_FUNCS, ALU_OPS, emit, is_scalar, op_name
from ..tracer import PSUM, Tile
from .common import (
    Engine,
    ReduceCmd,
    alu_op,
    alu_or_bypass,
    as_enum,
    dst_tile,
    matmul_perf_mode,
    nc_at_least,
    operand,
    reduce_cmd,
    reduce_command,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)


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
    have written); False: overwrite. ``perf_mode=double_row`` (NeuronCore-v3+, fp8 operands):
    twice the throughput. ``is_transpose=True``: a TensorE transpose of stationary by an identity
    moving (what nc_transpose does), bit-exact into a dst of stationary's dtype."""
    if accumulate is not None and not isinstance(accumulate, bool):
        raise NkiError(f"nc_matmul accumulate= takes None, True or False, got {accumulate!r}")
    if is_transpose and (accumulate or is_stationary_onezero or is_moving_onezero):
        raise NkiError("nc_matmul(is_transpose=True) neither accumulates nor takes 0/1 hints")
    double = (
        as_enum(perf_mode, matmul_perf_mode, "nc_matmul perf_mode") is not matmul_perf_mode.none
    )
    if double:
        nc_at_least(3, "nc_matmul perf_mode=double_row")
    isa.nc_matmul(
        stationary,
        moving,
        dst=dst_tile(dst),
        is_stationary_onezero=is_stationary_onezero,
        is_moving_onezero=is_moving_onezero,
        # True is checked by the replay: the elements it adds to must have been written
        accumulate="auto" if accumulate is None else ("checked" if accumulate else False),
        perf="double_row" if double else None,
        transpose=bool(is_transpose),
    )


def nc_transpose(dst, data, engine=unknown_engine, name=None):
    """Partition <-> free transpose on TensorE (SBUF -> PSUM, up to 128x128) or VectorE (up to
    32x32); ``engine=unknown`` picks by where ``dst`` lives. ``dst`` keeps ``data``'s dtype."""
    d = dst_tile(dst)
    as_enum(engine, Engine, "nc_transpose engine")
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
    as_enum(engine, Engine, "tensor_tensor engine")
    alu_op(op, "tensor_tensor op")
    isa.tensor_tensor(data1, data2, op, dst=dst_tile(dst), engine=engine)


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
    as_enum(engine, Engine, "tensor_scalar engine")
    alu_op(op0, "op0")
    if op1 is not None:
        alu_op(op1, "op1")
    isa.tensor_scalar(
        data, op0, operand0, reverse0, op1, operand1, reverse1, dst=dst_tile(dst), engine=engine
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
    d, x = dst_tile(dst), isa._tile(data, "data")
    srcs, attrs = [x], {"op0": alu_op(op0, "op0"), "op1": alu_op(op1, "op1")}
    operand(operand0, "operand0", srcs, attrs)
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
    """``dst = data op0 operand0`` on VectorE, whose accumulator registers take ``reduce_op`` of
    dst over its free axes as ``reduce_cmd`` says (reset_reduce: replace them; reduce: combine;
    reset: identity; load_reduce: start from ``reduce_init``; idle: leave them); ``reduce_res``
    receives the registers (negated with ``reduce_res_negate``)."""
    d, x = dst_tile(dst), isa._tile(data, "data")
    cmd = reduce_command(reduce_cmd, ALL_COMMANDS, "tensor_scalar_reduce")
    srcs, attrs = [x], {"op0": alu_op(op0, "op0"), "reverse0": bool(reverse0)}
    operand(operand0, "operand0", srcs, attrs)
    attrs["reduce_op"] = op_name(reduce_op, ALU_OPS, "reduce_op")
    if attrs["reduce_op"] not in ("add", "multiply", "maximum", "minimum"):
        raise NkiError(
            f"tensor_scalar_reduce reduce_op must be add, multiply, max or min, not {attrs['reduce_op']}",
            "err_unsupported_reduce_op",
        )
    attrs["negate"] = bool(reduce_res_negate)
    attrs["reduce_cmd"] = cmd
    _reduce_init(cmd, reduce_init, None, srcs, attrs, "tensor_scalar_reduce")
    dsts = [d]
    if reduce_res is not None:
        dsts.append(dst_tile(reduce_res, "reduce_res"))
    emit("tensor_scalar_reduce", dsts, srcs, attrs)


#: the commands of VectorE's accumulator registers (tensor_scalar_reduce, exponential)
ALL_COMMANDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def _reduce_init(cmd: str, value, unset, srcs: list, attrs: dict, what: str) -> None:
    """reduce_init: the registers' start value with load_reduce (a scalar or [P, 1] tile),
    otherwise left at ``unset``."""
    if cmd == "load_reduce":
        if value is None:
            raise NkiError(f"{what} reduce_cmd=load_reduce needs reduce_init")
        operand(value, "reduce_init", srcs, attrs)
    elif value is not unset and not (is_scalar(value) and float(value) == (unset or 0.0)):
        raise NkiError(f"{what} reduce_init is used only with reduce_cmd=load_reduce")


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    isa.tensor_reduce(op, data, axis, dst=dst_tile(dst), negate=negate, keepdims=keepdims)


def tensor_partition_reduce(dst, op, data, name=None):
    isa.tensor_partition_reduce(op, data, dst=dst_tile(dst))


def tensor_copy(dst, src, engine=unknown_engine, name=None):
    as_enum(engine, Engine, "tensor_copy engine")
    isa.tensor_copy(src, dst=dst_tile(dst), engine=engine)


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
    if as_enum(engine, Engine, "activation engine") not in (scalar_engine, unknown_engine):
        raise NkiError("activation on GpSimd is not emulated", "err_unsupported_api")
    reduce_command(reduce_cmd, ("idle", "reset", "reduce", "reset_reduce"), "activation")
    idle = reduce_cmd is ReduceCmd.idle
    isa.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        # v1's activation without a command but with reduce_res means reset_reduce
        reduce_cmd=None if idle and reduce_res is not None else reduce_cmd,
        dst=dst_tile(dst),
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
        reduce_res=dst_tile(reduce_res, "reduce_res"),
        reduce_cmd=ReduceCmd.reset_reduce,
        dst=dst_tile(dst),
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
    nc_at_least(4, "nisa.activate2")
    d, x = dst_tile(dst), isa._tile(data, "data")
    srcs: list = [x]
    attrs: dict = {
        "func": op_name(op, ACT_FUNCS, "activate2 function"),
        "op0": alu_or_bypass(op0, "op0"),
        "op1": alu_or_bypass(op1, "op1"),
        "reverse0": bool(reverse0),
        "reverse1": bool(reverse1),
    }
    operand(imm0, "imm0", srcs, attrs)
    operand(imm1, "imm1", srcs, attrs)
    if not is_scalar(relu_param):
        raise NkiError(
            "activate2 relu_param must be a scalar in this emulator", "err_unsupported_api"
        )
    attrs["relu_param"] = float(relu_param)
    dsts = [d]
    cmd = reduce_command(reduce_cmd, ("idle", "reset_reduce"), "activate2")
    if reduce_res is not None:
        if cmd != "reset_reduce":
            raise NkiError("activate2 reduce_res needs reduce_cmd=reduce_cmd.reset_reduce")
        attrs["reduce_op"] = op_name(reduce_op or "add", ALU_OPS, "reduce_op")
        dsts.append(dst_tile(reduce_res, "reduce_res"))
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
    """NeuronCore-v4 VectorE: ``dst = exp(src - max_value)`` (max_value a scalar or [P, 1] tile);
    VectorE's accumulator registers add up dst per partition as ``reduce_cmd`` says (as
    tensor_scalar_reduce's), and ``reduce_res`` receives them: a softmax denominator across tiles."""
    nc_at_least(4, "nisa.exponential")
    d, x = dst_tile(dst), isa._tile(src, "src")
    srcs: list = [x]
    attrs: dict = {}
    operand(max_value, "max_value", srcs, attrs)
    cmd = reduce_command(reduce_cmd, ALL_COMMANDS, "exponential")
    attrs["reduce_cmd"] = cmd
    _reduce_init(cmd, reduce_init, 0.0, srcs, attrs, "exponential")
    dsts = [d]
    if reduce_res is not None:
        dsts.append(dst_tile(reduce_res, "reduce_res"))
    emit("exponential", dsts, srcs, attrs)


def reciprocal(dst, data, name=None):
    isa.reciprocal(data, dst=dst_tile(dst))


def tensor_tensor_scan(
    dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None
):
    isa.tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0, reverse1, dst=dst_tile(dst))


def memset(dst, value, engine=unknown_engine, name=None):
    """Fill ``dst`` with a constant. Strict types (NKI 0.3): a Python int or float, an integral
    value in range for an integer ``dst``."""
    d = dst_tile(dst)
    as_enum(engine, Engine, "memset engine")
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


def tensor_scalar_cumulative(
    dst, src, op0, op1, imm0, imm1=None, reduce_cmd=reduce_cmd.reset_reduce, name=None
):
    """VectorE: per partition along the free elements, ``reg = op1(src[i] op0 imm0, reg)`` and
    ``dst[i] = reg``; reg starts at op1's identity (reset_reduce) or at ``imm1`` (load_reduce)."""
    cmd = reduce_command(reduce_cmd, ("reset_reduce", "load_reduce"), "tensor_scalar_cumulative")
    srcs: list = [isa._tile(src, "src")]
    attrs: dict = {"op0": alu_op(op0, "op0"), "op1": alu_op(op1, "op1"), "reduce_cmd": cmd}
    operand(imm0, "imm0", srcs, attrs)
    if cmd == "load_reduce":
        if imm1 is None:
            raise NkiError("tensor_scalar_cumulative with load_reduce needs imm1 (the start value)")
        operand(imm1, "imm1", srcs, attrs)
    emit("tensor_scalar_cumulative", [dst_tile(dst)], srcs, attrs)
