"""The current ``nki.isa``'s pattern and selection instructions: iota and affine_select (the
0.2+ ``pattern`` form), range_select, select_reduce, tensor_copy_predicated and
nc_stream_shuffle, and nc_n_gather (a gather inside each partition)."""

from __future__ import annotations

import numpy as np

from .. import dtypes, isa
from ..indexing import NkiError
from ..recording import ALU_OPS, emit, is_scalar, op_name
from .common import dst_tile, nc_at_least, operand, reduce_cmd, reduce_command


def _pattern(pattern, what: str) -> list[list[int]]:
    """``[[step, num], ...]`` (one to four levels of ints, num > 0) as plain lists."""

    def level_ok(level) -> bool:
        return (
            isinstance(level, (list, tuple))
            and len(level) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in level)
            and level[1] > 0
        )

    if not (
        isinstance(pattern, (list, tuple))
        and 0 < len(pattern) <= 4
        and all(level_ok(level) for level in pattern)
    ):
        raise NkiError(
            f"{what} pattern must be one to four [step, num] pairs of ints, got {pattern!r}",
            "err_invalid_access_pattern",
        )
    return [[step, num] for step, num in pattern]


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NkiError(f"{what} must be an int, got {value!r}")
    return value


def iota(dst, pattern, offset, channel_multiplier=0, name=None):
    """GpSimd: ``dst[p, i] = offset + p * channel_multiplier + sum(step_k * index_k)`` over the
    pattern's nested [step, num] levels (outermost first), dst in SBUF."""
    emit(
        "iota_pattern",
        [dst_tile(dst)],
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
        [dst_tile(dst)],
        [isa._tile(on_true_tile, "on_true_tile")],
        {
            "pattern": _pattern(pattern, "affine_select"),
            "offset": _int(offset, "affine_select offset"),
            "channel_multiplier": _int(channel_multiplier, "affine_select channel_multiplier"),
            "cmp": cmp,
            "on_false": float(on_false_value),
        },
    )


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """VectorE: ``dst = src`` where ``predicate`` (uint8/16/32) is nonzero (zero with
    ``reverse_pred``, which needs a scalar src); ``dst`` keeps its values elsewhere."""
    d = dst_tile(dst)
    srcs: list = []
    attrs: dict = {"reverse": bool(reverse_pred)}
    if is_scalar(src):
        if (d.tensor.dtype in dtypes.FLOATS) != isinstance(src, float):
            raise NkiError(
                f"tensor_copy_predicated scalar src {src!r} must be of dst's kind ({d.tensor.dtype}): "
                "a Python float for a float dst, an int for an integer dst",
                "err_unsupported_dtype",
            )
    operand(src, "src", srcs, attrs)
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
    nc_at_least(3, "nisa.range_select")
    cmp0 = op_name(comp_op0, ALU_OPS, "comp_op0")
    cmp1 = op_name(comp_op1, ALU_OPS, "comp_op1")
    if cmp0 not in _CMP or cmp1 not in _CMP:
        raise NkiError(f"range_select comparisons must be comparison ops, got {cmp0}, {cmp1}")
    reduce_command(reduce_cmd, ("idle", "reset_reduce"), "range_select")
    if not (is_scalar(range_start) and is_scalar(on_false_value)):
        raise NkiError("range_select range_start and on_false_value must be scalars")
    attrs = {
        "cmp0": cmp0,
        "cmp1": cmp1,
        "range_start": float(range_start),
        "on_false": float(on_false_value),
    }
    dsts = [dst_tile(dst)]
    if reduce_res is not None:
        attrs["reduce_op"] = op_name(reduce_op, ALU_OPS, "reduce_op")
        dsts.append(dst_tile(reduce_res, "reduce_res"))
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
    d = dst_tile(dst)
    reduce_command(reduce_cmd, ("idle", "reset_reduce"), "select_reduce")
    if op_name(reduce_op, ALU_OPS, "reduce_op") != "maximum":
        raise NkiError("select_reduce reduces with max only", "err_unsupported_reduce_op")
    if is_scalar(on_false) and not isinstance(on_false, float):
        raise NkiError("select_reduce scalar on_false must be a float (float32)")
    srcs: list = [isa._tile(predicate, "predicate"), isa._tile(on_true, "on_true")]
    attrs: dict = {"reverse": bool(reverse_pred)}
    operand(on_false, "on_false", srcs, attrs)
    dsts = [d] + ([] if reduce_res is None else [dst_tile(reduce_res, "reduce_res")])
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
    emit("stream_shuffle", [dst_tile(dst)], [isa._tile(src, "src")], {"mask": mask})


def nc_n_gather(dst, data, indices, name=None):
    """GpSimd: per partition, ``dst[p, j] = data[p, indices[p, j]]`` over data's flattened free
    elements; indices uint32, all in SBUF, dst of data's dtype and of indices' shape."""
    emit(
        "n_gather",
        [dst_tile(dst)],
        [isa._tile(data, "data"), isa._tile(indices, "indices")],
        {},
    )
