"""The current API's VectorE selections: tensor_copy_predicated (copy where a predicate tile is
nonzero, keep the destination elsewhere) and range_select (keep the elements whose free index
lies between two per-partition bounds, with a fused reduction; NeuronCore-v3+)."""

from __future__ import annotations

import math

import numpy as np

from .. import pricing
from ..numerics import REDUCE
from ..rules import elementwise_checks, onchip, shape_eq
from ..state import AP, Core, fail, free
from .fused import _reduce, _reduce_target
from .generations import require

PREDICATE_DTYPES = ("uint8", "uint16", "uint32")


def copy_predicated(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    pred = srcs[-1]
    src = srcs[0] if attrs.get("src") == "ap" else None
    if src is None and (
        len(srcs) != 1
        or isinstance(attrs.get("src"), bool)
        or not isinstance(attrs.get("src"), (int, float))
    ):
        raise ValueError("src")
    elementwise_checks("dve", dsts, srcs, "tensor_copy_predicated", core.line)
    shape_eq(pred, d, "tensor_copy_predicated predicate", core.line)
    if pred.t.dtype not in PREDICATE_DTYPES:
        fail(
            f"tensor_copy_predicated predicate must be uint8, uint16 or uint32, got {pred.t.dtype}",
            "err_unsupported_dtype",
            core.line,
        )
    if src is not None:
        shape_eq(src, d, "tensor_copy_predicated src", core.line)
        if src.t.dtype != d.t.dtype:
            fail(
                f"tensor_copy_predicated src ({src.t.dtype}) and dst ({d.t.dtype}) must share a dtype",
                "err_unsupported_dtype",
                core.line,
            )
        if src.t.buffer == "psum" and pred.t.buffer == "psum":
            fail(
                "tensor_copy_predicated cannot read both src and predicate from PSUM",
                "err_unsupported_memory",
                core.line,
            )
        if attrs.get("reverse"):
            fail(
                "tensor_copy_predicated reverse_pred=True needs a scalar src",
                "err_unsupported_api",
                core.line,
            )
    if core.numeric:
        keep = pred.view() != 0
        if attrs.get("reverse"):
            keep = ~keep
        value = src.view() if src is not None else np.asarray(attrs["src"], d.t.data.dtype)
        view = d.view()
        view[...] = np.where(keep, value, view)
    one_psum = src is not None and "psum" in (src.t.buffer, pred.t.buffer)
    pricing.compute(  # nisa docs: N with one operand in PSUM, 2N from SBUF only
        core, "dve", "copy_predicated", free(d), dsts, srcs, k=1.0 if one_psum else 2.0
    )


_COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
}


def _bound(core: Core, ap: AP, data: AP, what: str) -> np.ndarray | None:
    onchip(ap, f"range_select {what}", core.line)
    if ap.dims[0][0] != data.dims[0][0] or math.prod(ap.shape[1:]) != 1:
        fail(
            f"range_select {what} must be a [P, 1] tile with the data's partitions",
            "err_num_partition_mismatch",
            core.line,
        )
    return ap.read().reshape(core.seeds, -1, 1) if core.numeric else None


def range_select(core: Core, dsts, srcs, attrs) -> None:
    require(core, "range_select", "nki.isa.range_select")
    d, (x, lo, hi) = dsts[0], srcs
    c0, c1 = _COMPARE.get(attrs["cmp0"]), _COMPARE.get(attrs["cmp1"])
    start, fill, op = attrs["range_start"], attrs["on_false"], attrs.get("reduce_op", "maximum")
    if c0 is None or c1 is None or op not in REDUCE:
        raise ValueError("range_select")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (start, fill)):
        raise ValueError("range_select")
    elementwise_checks("dve", dsts[:1], [x], "range_select", core.line)
    shape_eq(x, d, "range_select output", core.line)
    b0, b1 = _bound(core, lo, x, "bound0"), _bound(core, hi, x, "bound1")
    red = _reduce_target(core, dsts, x, "range_select")
    if core.numeric:
        values = x.read().reshape(core.seeds, x.dims[0][0], -1)
        index = np.arange(values.shape[-1], dtype=np.float32)[None, None, :] + np.float32(start)
        keep = c0(index, b0) & c1(index, b1)
        y = np.where(keep, values, np.float32(fill))
        d.write(y.reshape((core.seeds, *d.shape)))
        _reduce(core, red, y, op)
    pricing.compute(core, "dve", "range_select", free(d), dsts, srcs, k=1.0)
