"""The reductions: tensor_reduce along free axes (merged into a preceding activation where the
compiler does that), the tensor_tensor scan, the reduction across partitions, and the current
API's tensor_scalar_cumulative (a running reduction along the free elements)."""

from __future__ import annotations

import math

import numpy as np

from .. import pricing
from ..numerics import ALU, REDUCE, linear_scan
from ..rules import elementwise_checks, shape_eq
from ..state import Core, as_int, fail, free
from .elementwise import _scalar_operand
from .generations import alu


def tensor_reduce(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    op = attrs["op"]
    if op not in REDUCE:
        raise ValueError("op")
    elementwise_checks("dve", dsts, srcs, f"tensor_reduce {op}", core.line)
    axes = tuple(as_int(a, "axis") for a in attrs["axes"])
    rank = len(s.dims)
    if not axes or 0 in axes or any(not 0 < a < rank for a in axes):
        fail(
            "reductions run over free axes only (not the partition axis 0)",
            "err_unsupported_reduce_axis",
            core.line,
        )
    if attrs.get("strict") and (sorted(axes) != list(range(min(axes), rank))):
        fail(
            "tensor_reduce axes must be consecutive and include the last axis",
            "err_unsupported_reduce_axis",
            core.line,
        )
    kept = [n for a, n in enumerate(s.shape) if a not in axes]
    if math.prod(d.shape) != math.prod(kept) or d.dims[0][0] != s.dims[0][0]:
        fail(
            f"reduction output {list(d.shape)} does not match the reduced shape",
            "err_num_partition_mismatch",
            core.line,
        )
    if core.numeric:
        x = s.read()
        with np.errstate(all="ignore"):
            r = REDUCE[op](x, axis=tuple(a + 1 for a in axes))
        if attrs.get("negate"):
            r = -r
        d.write(r.reshape((core.seeds, *d.shape)))
    k = 0.5 if s.t.dtype == "bfloat16" and op in ("add", "maximum") else None  # nisa docs: N/2
    if pricing.merged_into_activation(core, core.fusions.reduce_into_act, d, "tensor_reduce"):
        pricing.not_issued(
            core, "activation_reduce", "dve", "tensor_reduce", free(s), dsts, srcs, k=k
        )
        return
    pricing.compute(core, "dve", "tensor_reduce", free(s), dsts, srcs, k=k)


def scan(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    a, b = srcs[0], srcs[1]
    op0, op1 = attrs["op0"], attrs["op1"]
    if op0 not in ALU or op1 not in ALU:
        raise ValueError("op")
    elementwise_checks("dve", dsts, srcs, "tensor_tensor_scan", core.line)
    shape_eq(a, b, "tensor_tensor_scan operands", core.line)
    shape_eq(a, d, "tensor_tensor_scan output", core.line)
    if a.t.buffer == "psum" and b.t.buffer == "psum":
        fail(
            "tensor_tensor_scan cannot read both inputs from PSUM",
            "err_unsupported_memory",
            core.line,
        )
    init_ap = None
    if attrs.get("initial") == "ap":
        init_ap = srcs[2]
        if init_ap.dims[0][0] != a.dims[0][0] or math.prod(init_ap.shape[1:]) != 1:
            fail(
                "tensor_tensor_scan initial must be a scalar or a [P, 1] tile",
                "err_num_partition_mismatch",
                core.line,
            )
        if len(srcs) != 3:
            raise ValueError("operand count")
    elif (
        isinstance(attrs.get("initial"), bool)
        or not isinstance(attrs.get("initial"), (int, float))
        or len(srcs) != 2
    ):
        raise ValueError("initial")
    if core.numeric:
        p = a.dims[0][0]
        x0 = a.read().reshape(core.seeds, p, -1)
        x1 = b.read().reshape(core.seeds, p, -1)
        r = (
            init_ap.read().reshape(core.seeds, p)
            if init_ap is not None
            else np.full((core.seeds, p), attrs["initial"], np.float32)
        )
        f0, f1 = ALU[op0], ALU[op1]
        out = np.empty_like(x0)
        with np.errstate(all="ignore"):
            if (
                op0 == "multiply"
                and op1 == "add"
                and not attrs.get("reverse0")
                and not attrs.get("reverse1")
            ):
                out = linear_scan(x0, x1, r)
            else:
                for i in range(x0.shape[2]):
                    t = f0(r, x0[:, :, i]) if attrs.get("reverse0") else f0(x0[:, :, i], r)
                    r = f1(x1[:, :, i], t) if attrs.get("reverse1") else f1(t, x1[:, :, i])
                    out[:, :, i] = r
        d.write(out.reshape((core.seeds, *d.shape)))
    pricing.compute(core, "dve", "scan", free(d), dsts, srcs)


def partition_reduce(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    op = attrs["op"]
    if op not in REDUCE:
        raise ValueError("op")
    elementwise_checks("pool", dsts, srcs, "tensor_partition_reduce", core.line)
    if d.dims[0][0] != 1 or d.shape[1:] != s.shape[1:]:
        fail(
            "tensor_partition_reduce output must be [1, F]",
            "err_num_partition_mismatch",
            core.line,
        )
    if core.numeric:
        d.write(REDUCE[op](s.read(), axis=1, keepdims=True))
    pricing.compute(core, "pool", "partition_reduce", free(s) * 2, dsts, srcs)


#: the register's starting value of each tensor_scalar_cumulative operator (reduce_cmd=reset_reduce)
CUMULATIVE_START = {
    "add": 0.0,
    "subtract": 0.0,
    "multiply": 1.0,
    "maximum": -np.inf,
    "minimum": np.inf,
}
_NO_INT32 = ("int32", "uint32")


def cumulative(core: Core, dsts, srcs, attrs) -> None:
    """tensor_scalar_cumulative: per partition along the free elements,
    ``reg = op1(op0(x[i], imm0), reg)`` and ``dst[i] = reg``; the register starts at op1's
    identity (reset_reduce) or at ``imm1`` (load_reduce)."""
    (d,), data = dsts, srcs[0]
    op1 = attrs["op1"]
    f0, f1 = alu(core, attrs["op0"]), alu(core, op1)
    if op1 not in CUMULATIVE_START:
        fail(
            f"tensor_scalar_cumulative op1 must be add, subtract, multiply, max or min, not {op1}",
            "err_unsupported_reduce_op",
            core.line,
        )
    elementwise_checks("dve", dsts, srcs[:1], "tensor_scalar_cumulative", core.line)
    shape_eq(data, d, "tensor_scalar_cumulative output", core.line)
    if {data.t.dtype, d.t.dtype} & set(_NO_INT32):
        fail(
            "tensor_scalar_cumulative does not take int32/uint32 input or output",
            "err_unsupported_dtype",
            core.line,
        )
    v0, k = _scalar_operand(core, attrs, "imm0", srcs, 1, data)
    start = CUMULATIVE_START[op1]
    if attrs.get("reduce_cmd", "reset_reduce") == "load_reduce":
        start, k = _scalar_operand(core, attrs, "imm1", srcs, k, data)
    elif attrs.get("reduce_cmd", "reset_reduce") != "reset_reduce":
        raise ValueError("reduce_cmd")
    if k != len(srcs):
        raise ValueError("operand count")
    if core.numeric:
        p = data.dims[0][0]
        with np.errstate(all="ignore"):
            t = f0(data.read(), v0).reshape(core.seeds, p, -1)
            reg = np.broadcast_to(np.asarray(start, np.float32), (core.seeds, p, 1))
            reg = reg.reshape(core.seeds, p).astype(np.float32)
            out = np.empty_like(t)
            for i in range(t.shape[2]):
                reg = f1(t[:, :, i], reg)
                out[:, :, i] = reg
        d.write(out.reshape((core.seeds, *d.shape)))
    pricing.compute(core, "dve", "tensor_scalar_cumulative", free(d), dsts, srcs, k=1.0)
