"""The current API's VectorE selections: tensor_copy_predicated (copy where a predicate tile is
nonzero, keep the destination elsewhere), range_select (keep the elements whose free index
lies between two per-partition bounds, with a fused reduction; NeuronCore-v3+), select_reduce
(choose between two operands by a predicate, with a fused max) and nc_stream_shuffle (move
partitions within each quadrant of 32)."""

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


SELECT_PREDICATE_DTYPES = ("int8", "uint8", "int16", "uint16")


def select_reduce(core: Core, dsts, srcs, attrs) -> None:
    """``dst = where(predicate, on_true, on_false)`` (on_false a scalar or [P, 1] tile), and
    the max of each partition of the result into ``reduce_res``."""
    d = dsts[0]
    pred, on_true = srcs[0], srcs[1]
    elementwise_checks("dve", dsts[:1], srcs[:2], "select_reduce", core.line)
    shape_eq(on_true, d, "select_reduce on_true", core.line)
    shape_eq(pred, d, "select_reduce predicate", core.line)
    if pred.t.dtype not in SELECT_PREDICATE_DTYPES:
        fail(
            f"select_reduce predicate must be int8, uint8, int16 or uint16, got {pred.t.dtype}",
            "err_unsupported_dtype",
            core.line,
        )
    if on_true.t.dtype in ("tfloat32", "int32", "uint32"):
        fail(
            f"select_reduce on_true cannot be {on_true.t.dtype}", "err_unsupported_dtype", core.line
        )
    if pred.t.buffer == "psum" and on_true.t.buffer == "psum":
        fail(
            "select_reduce cannot read both on_true and predicate from PSUM",
            "err_unsupported_memory",
            core.line,
        )
    other = None
    if attrs.get("on_false") == "ap":
        if len(srcs) != 3:
            raise ValueError("operand count")
        _bound(core, srcs[2], on_true, "on_false")
        other = srcs[2]
    elif len(srcs) != 2 or isinstance(attrs.get("on_false"), bool):
        raise ValueError("on_false")
    elif not isinstance(attrs.get("on_false"), (int, float)):
        raise ValueError("on_false")
    red = _reduce_target(core, dsts, on_true, "select_reduce")
    if red is not None and red.t.dtype not in ("float32", "bfloat16", "float16"):
        fail("select_reduce reduce_res must be a float tile", "err_unsupported_dtype", core.line)
    if core.numeric:
        keep = pred.read() != 0
        if attrs.get("reverse"):
            keep = ~keep
        shape1 = (core.seeds, on_true.dims[0][0], *([1] * (len(on_true.dims) - 1)))
        fill = other.read().reshape(shape1) if other is not None else np.float32(attrs["on_false"])
        y = np.where(keep, on_true.read(), fill)
        d.write(y)
        _reduce(core, red, y, "maximum")
    pricing.compute(core, "dve", "select_reduce", free(d), dsts, srcs, k=1.0)


def stream_shuffle(core: Core, dsts, srcs, attrs) -> None:
    """nc_stream_shuffle: in each quadrant of 32 partitions, dst partition i takes src partition
    ``mask[i]`` of the same quadrant (255: dst partition i keeps its values)."""
    (d,), (s,) = dsts, srcs
    mask = attrs["mask"]
    if not (isinstance(mask, list) and len(mask) == 32):
        raise ValueError("mask")
    if any(
        isinstance(m, bool) or not isinstance(m, int) or not (0 <= m < 32 or m == 255) for m in mask
    ):
        raise ValueError("mask")
    elementwise_checks("dve", dsts, srcs, "nc_stream_shuffle", core.line)
    parts = s.dims[0][0]
    if d.dims[0][0] != parts or parts % 32 or free(d) != free(s):
        fail(
            "nc_stream_shuffle src and dst must span the same whole quadrants of 32 partitions "
            f"and the same elements per partition, got {list(s.shape)} and {list(d.shape)}",
            "err_num_partition_mismatch",
            core.line,
        )
    if s.t.dtype != d.t.dtype:
        fail("nc_stream_shuffle dst must have src's dtype", "err_unsupported_dtype", core.line)
    if core.numeric:
        x = s.view().reshape(core.seeds, parts, -1)
        out = d.view().reshape(core.seeds, parts, -1).copy()
        for q in range(0, parts, 32):
            for i, m in enumerate(mask):
                if m != 255:
                    out[:, q + i] = x[:, q + m]
        d.view()[...] = out.reshape((core.seeds, *d.shape))
    pricing.compute(core, "dve", "stream_shuffle", free(d), dsts, srcs, k=1.0)


def n_gather(core: Core, dsts, srcs, attrs) -> None:
    """nc_n_gather: per partition, ``dst[p, j] = data[p, indices[p, j]]`` over data's flattened
    free elements (GpSimd, SBUF only); an index past the partition's elements is refused."""
    (d,), (data, index) = dsts, srcs
    elementwise_checks("pool", dsts, srcs, "nc_n_gather", core.line)
    for ap in (d, data, index):
        onchip(ap, "nc_n_gather operand", core.line, ("sbuf",))
    parts = data.dims[0][0]
    if d.dims[0][0] != parts or index.dims[0][0] != parts or free(d) != free(index):
        fail(
            "nc_n_gather data, indices and dst must share partitions, and dst has indices' "
            "elements per partition",
            "err_num_partition_mismatch",
            core.line,
        )
    if index.t.dtype != "uint32" or d.t.dtype != data.t.dtype:
        fail(
            "nc_n_gather indices must be uint32 and dst must have data's dtype",
            "err_unsupported_dtype",
            core.line,
        )
    if core.numeric:
        where = index.view().reshape(core.seeds, parts, -1).astype(np.int64)
        if (where >= free(data)).any():
            fail(
                f"nc_n_gather index {int(where.max())} is past the {free(data)} elements of a "
                "partition of data",
                "err_index_out_of_bounds",
                core.line,
            )
        values = data.view().reshape(core.seeds, parts, -1)
        d.view()[...] = np.take_along_axis(values, where, axis=-1).reshape((core.seeds, *d.shape))
    pricing.compute(core, "pool", "n_gather", free(d), dsts, srcs, k=1.0)
