"""The element-wise instructions of VectorE, ScalarE and GpSimd: tensor_tensor, tensor_scalar,
activation (with ScalarE's reduce registers), copies, memset, select, reciprocal, iota and
affine_select. Each takes the core, its validated destinations and sources, and the
instruction's attributes; it checks the rules, computes the result and schedules the cost."""

from __future__ import annotations

import math

import numpy as np

from ... import dtypes
from .. import pricing
from ..numerics import ACT, BITWISE, REDUCE_CMDS, affine_values
from ..pricing import POOL_FIXED, tensor_tensor_k
from ..rules import elementwise_checks, onchip, pick_engine, shape_eq
from ..state import AP, Core, as_int, fail, free
from .generations import alu


def tensor_tensor(core: Core, dsts, srcs, attrs) -> None:
    (d,), (a, b) = dsts, srcs
    engine = pick_engine(attrs, ("dve", "pool"), "dve", core.line)
    op = attrs["op"]
    fn = alu(core, op)
    elementwise_checks(engine, dsts, srcs, f"tensor_tensor {op}", core.line)
    shape_eq(a, b, "tensor_tensor operands", core.line)
    shape_eq(a, d, "tensor_tensor output", core.line)
    if a.t.buffer == "psum" and b.t.buffer == "psum" and not (attrs.get("acc") and a.same(d)):
        fail(
            "tensor_tensor cannot read both inputs from PSUM (copy one to SBUF)",
            "err_unsupported_memory",
            core.line,
        )
    if op in BITWISE and any(ap.t.dtype in dtypes.FLOATS for ap in (a, b)):
        fail(f"{op} needs integer operands", "err_unsupported_dtype", core.line)
    if core.numeric:
        with np.errstate(all="ignore"):
            d.write(fn(a.read(), b.read()))
    k = tensor_tensor_k(op, a, b, d) if engine == "dve" else None
    pricing.compute(core, engine, "tensor_tensor", free(d), dsts, srcs, k=k)


def _scalar_operand(core: Core, attrs: dict, key: str, srcs: list, k: int, data: AP):
    v = attrs.get(key)
    if v == "ap":
        ap = srcs[k]
        if ap.dims[0][0] != data.dims[0][0] or math.prod(ap.shape[1:]) != 1:
            fail(
                f"tensor_scalar {key} must be a scalar or a [P, 1] tile matching the data's partitions",
                "err_num_partition_mismatch",
                core.line,
            )
        onchip(ap, key, core.line)
        return (
            ap.read().reshape(core.seeds, ap.dims[0][0], *([1] * (len(data.dims) - 1)))
            if core.numeric
            else None
        ), k + 1
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(key)
    return np.float32(v), k


def tensor_scalar(core: Core, dsts, srcs, attrs) -> None:
    (d,), data = dsts, srcs[0]
    engine = pick_engine(attrs, ("dve", "act", "pool"), "dve", core.line)
    elementwise_checks(engine, dsts, srcs[:1], "tensor_scalar", core.line)
    shape_eq(data, d, "tensor_scalar output", core.line)
    op0, op1 = attrs["op0"], attrs.get("op1")
    f0, f1 = alu(core, op0), None if op1 is None else alu(core, op1)
    if engine == "act" and core.gen.nc_version == 3 and {op0, op1} - {"multiply", "add", None}:
        fail(
            "ScalarE tensor_scalar on Trn2 supports multiply and add only",
            "err_unsupported_engine",
            core.line,
        )
    v0, k = _scalar_operand(core, attrs, "operand0", srcs, 1, data)
    v1 = None
    if op1 is not None:
        v1, k = _scalar_operand(core, attrs, "operand1", srcs, k, data)
    if k != len(srcs) and not (attrs.get("acc") and len(srcs) == 1):
        raise ValueError("operand count")
    if core.numeric:
        x = data.read()
        with np.errstate(all="ignore"):
            x = f0(v0, x) if attrs.get("reverse0") else f0(x, v0)
            if f1 is not None:
                x = f1(v1, x) if attrs.get("reverse1") else f1(x, v1)
        d.write(x)
    pricing.compute(core, engine, "tensor_scalar", free(d), dsts, srcs)


def activation(core: Core, dsts, srcs, attrs) -> None:
    d, data = dsts[0], srcs[0]
    func = attrs["func"]
    if func not in ACT:
        raise ValueError("func")
    elementwise_checks("act", dsts[:1], srcs[:1], f"activation {func}", core.line)
    if func == "rsqrt" and data.t.buffer == "psum" and core.gen.nc_version >= 3:
        fail(  # (Trn1 runs the legacy API, where it could)
            "rsqrt cannot read PSUM (NKI 0.5): copy the tile to SBUF first",
            "err_unsupported_memory",
            core.line,
        )
    shape_eq(data, d, "activation output", core.line)
    bias, scale = _activation_operands(core, data, srcs, attrs)
    cmd, red = _activation_reduce(core, data, dsts, attrs)
    if core.numeric:
        x = data.read()
        shape1 = (core.seeds, data.dims[0][0], *([1] * (len(data.dims) - 1)))
        x = x * (scale.read().reshape(shape1) if scale is not None else np.float32(attrs["scale"]))
        if bias is not None:
            x = x + bias.read().reshape(shape1)
        elif "bias" in attrs:  # a scalar bias (current API)
            x = x + np.float32(attrs["bias"])
        with np.errstate(all="ignore"):
            y = ACT[func](x).astype(np.float32)
        d.write(y)
        if cmd != "idle" or red is not None:
            _reduce_registers(core, data, y, cmd, red)
    fused = core.index in core.fusions.act_reduce  # the add-reduce that follows merges in
    end = pricing.compute(
        core,
        "act",
        "activation",
        free(d),
        dsts,
        srcs,
        extra_cycles=64 if red is not None or fused else 0,
    )
    if fused or core.index in core.fusions.act_copy:
        core.fused_end[core.index] = end


def _activation_operands(core: Core, data: AP, srcs, attrs) -> tuple[AP | None, AP | None]:
    """An activation's bias and scale vectors (None: no bias, or a scalar scale)."""
    k = 1
    bias = scale = None
    if attrs.get("bias") == "ap":
        bias = _vector(core, srcs[k], data, "bias")
        k += 1
    elif "bias" in attrs and (
        isinstance(attrs["bias"], bool) or not isinstance(attrs["bias"], (int, float))
    ):
        raise ValueError("bias")
    if attrs.get("scale") == "ap":
        scale = _vector(core, srcs[k], data, "scale")
        k += 1
    elif isinstance(attrs.get("scale"), bool) or not isinstance(attrs.get("scale"), (int, float)):
        raise ValueError("scale")
    if k != len(srcs):
        raise ValueError("operand count")
    return bias, scale


#: the dtypes an activation's bias and scale vectors may have, and the error that says otherwise
VECTOR_RULES = {
    "bias": (
        ("float32", "float16", "bfloat16"),
        "activation bias must be a [P, 1] fp32/fp16/bf16 vector",
        "err_activation_bias_invalid_type",
    ),
    "scale": (
        ("float32",),
        "activation scale must be a scalar or a [P, 1] fp32 vector",
        "err_activation_scale_invalid_type",
    ),
}


def _vector(core: Core, ap: AP, data: AP, what: str) -> AP:
    """``ap`` as the activation's per-partition ``what`` (bias or scale): [P, 1], on chip."""
    dtypes_ok, message, code = VECTOR_RULES[what]
    if (
        ap.dims[0][0] != data.dims[0][0]
        or math.prod(ap.shape[1:]) != 1
        or ap.t.dtype not in dtypes_ok
    ):
        fail(message, code, core.line)
    onchip(ap, f"activation {what}", core.line)
    return ap


def _activation_reduce(core: Core, data: AP, dsts, attrs) -> tuple[str, AP | None]:
    """What the activation does to the reduce registers, and the [P, 1] tile that receives them
    (None: none does)."""
    red = None
    cmd = attrs.get("reduce_cmd", "reset_reduce" if attrs.get("reduce") else "idle")
    if cmd not in REDUCE_CMDS:
        raise ValueError("reduce_cmd")
    if attrs.get("reduce"):
        red = dsts[1]
        onchip(red, "activation reduce_res", core.line)
        if red.dims[0][0] != data.dims[0][0] or math.prod(red.shape[1:]) != 1:
            fail(
                "activation reduce_res must be a [P, 1] tile",
                "err_num_partition_mismatch",
                core.line,
            )
    elif len(dsts) != 1:
        raise ValueError("dst count")
    return cmd, red


def _reduce_registers(core: Core, data: AP, y: np.ndarray, cmd: str, red: AP | None) -> None:
    """Apply ``cmd`` to the reduce registers of ``data``'s partitions with the free-axis sum
    of the activation's result ``y``; ``red`` receives the registers afterwards."""
    t = data.t
    p0 = (data.offset % (t.parts * t.free)) // t.free if t.buffer != "hbm" else 0
    lanes = slice(p0, p0 + data.dims[0][0])
    if cmd == "reset":
        core.act_regs[:, lanes] = 0.0
    elif cmd in ("reduce", "reset_reduce"):
        total = y.reshape(core.seeds, y.shape[1], -1).sum(axis=2, dtype=np.float32)
        if cmd == "reduce":
            total += core.act_regs[:, lanes]
        core.act_regs[:, lanes] = total
    if red is not None:
        red.write(core.act_regs[:, lanes].reshape((core.seeds, *red.shape)))


def tensor_copy(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    engine = pick_engine(attrs, ("dve", "act", "pool"), "dve", core.line)
    elementwise_checks(engine, dsts, srcs, "tensor_copy", core.line)
    shape_eq(s, d, "tensor_copy", core.line)
    if core.numeric:
        d.write(s.view() if s.t.dtype == d.t.dtype else s.read())
    if pricing.merged_into_activation(core, core.fusions.copy_into_act, d, "tensor_copy"):
        pricing.not_issued(core, "activation_copy", engine, "tensor_copy", free(d), dsts, srcs)
        return
    pricing.compute(core, engine, "tensor_copy", free(d), dsts, srcs)


def memset(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    engine = pick_engine(attrs, ("dve", "pool"), "dve", core.line)
    elementwise_checks(engine, dsts, [], "memset", core.line)
    value = attrs["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or srcs:
        raise ValueError("memset")
    if d.t.dtype not in dtypes.FLOATS:  # strict memset types (NKI 0.3)
        info = np.iinfo(dtypes.DTYPES[d.t.dtype])
        if not (math.isfinite(value) and value == int(value) and info.min <= value <= info.max):
            fail(
                f"memset value {value!r} is not a {d.t.dtype} value (strict memset types, NKI 0.3)",
                "err_memset_invalid_value",
                core.line,
            )
    if core.numeric:
        # integers exactly (an fp32 copy would lose int32 values past 2**24)
        d.write(np.float32(value) if d.t.dtype in dtypes.FLOATS else np.float64(value))
    k = 0.5 if d.t.dtype == "bfloat16" and value == 0 else None  # nisa docs: N/2
    if core.index in core.fusions.zeroing_matmul:  # the first matmul overwrites instead
        pricing.not_issued(core, "zeroing_matmul", engine, "memset", free(d), dsts, [], k=k)
        return
    pricing.compute(core, engine, "memset", free(d), dsts, [], k=k)


def iota(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    coeffs = [as_int(c, "coeff") for c in attrs["coeffs"]]
    if len(coeffs) != len(d.dims) or srcs:
        raise ValueError("iota rank")
    elementwise_checks("pool", dsts, [], "iota", core.line)
    if core.numeric:
        d.write(affine_values(d.shape, coeffs, as_int(attrs["const"], "const"))[None])
    pricing.compute(core, "pool", "iota", free(d), dsts, [], extra_cycles=POOL_FIXED["iota"])


def affine_select(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    coeffs = [as_int(c, "coeff") for c in attrs["coeffs"]]
    cmp = attrs["cmp"]
    if len(coeffs) != len(d.dims) or cmp not in ("<", "<=", ">", ">=", "=="):
        raise ValueError("affine_select predicate")
    elementwise_checks("pool", dsts, srcs, "affine_select", core.line)
    shape_eq(s, d, "affine_select", core.line)
    if core.numeric:
        v = affine_values(d.shape, coeffs, as_int(attrs["const"], "const"))
        keep = {"<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0, "==": v == 0}[cmp]
        d.write(np.where(keep[None], s.read(), np.float32(attrs["on_false"])))
    pricing.compute(
        core, "pool", "affine_select", free(d), dsts, srcs, extra_cycles=POOL_FIXED["affine_select"]
    )


def select(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    elementwise_checks("dve", dsts, srcs, "nl.where", core.line)
    k = 1
    vals = []
    for key in ("x", "y"):
        if attrs.get(key) == "ap":
            vals.append(srcs[k])
            k += 1
        elif isinstance(attrs.get(key), (int, float)) and not isinstance(attrs.get(key), bool):
            vals.append(np.float32(attrs[key]))
        else:
            raise ValueError(key)
    if k != len(srcs):
        raise ValueError("operand count")
    for ap in (srcs[0], *[v for v in vals if isinstance(v, AP)]):
        shape_eq(ap, d, "nl.where operands", core.line)
    if core.numeric:
        x, y = (v.read() if isinstance(v, AP) else v for v in vals)
        d.write(np.where(srcs[0].read() != 0, x, y))
    pricing.compute(core, "dve", "select", free(d), dsts, srcs)


def reciprocal(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    elementwise_checks("dve", dsts, srcs, "reciprocal", core.line)
    shape_eq(s, d, "reciprocal", core.line)
    if core.numeric:
        with np.errstate(all="ignore"):
            d.write(1.0 / s.read())
    pricing.compute(core, "dve", "reciprocal", free(d), dsts, srcs)
