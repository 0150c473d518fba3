"""The current ``nki.isa``'s statistics and searches: bn_stats / bn_aggr, max8,
nc_find_index8, nc_match_replace8 (VectorE), topk and nonzero_with_count (GpSimd)."""

from __future__ import annotations

from .. import isa
from ..indexing import NkiError
from ..recording import emit, is_scalar
from .common import dst_tile, nc_at_least


def bn_stats(dst, data, name=None):
    """VectorE: per partition (count, mean, variance*count) of the even and of the odd elements
    of ``data`` (at most 512 per partition): six values."""
    emit("bn_stats", [dst_tile(dst)], [isa._tile(data, "data")], {})


def bn_aggr(dst, data, name=None):
    """VectorE: (mean, variance) per partition from one or more bn_stats results."""
    emit("bn_aggr", [dst_tile(dst)], [isa._tile(data, "data")], {})


def max8(dst, src, name=None):
    """VectorE: the 8 largest values of each partition, in descending order."""
    emit("max8", [dst_tile(dst)], [isa._tile(src, "src")], {})


def nc_find_index8(dst, data, vals, name=None):
    """VectorE: per partition, the index of the first occurrence in ``data`` of each of the 8
    ``vals``; all ones (the dtype's maximum) for a value not found (NKI 0.6)."""
    emit(
        "find_index8",
        [dst_tile(dst)],
        [isa._tile(data, "data"), isa._tile(vals, "vals")],
        {},
    )


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """VectorE: ``data`` with the first occurrence of each of the 8 ``vals`` replaced by the
    scalar ``imm``; ``dst_idx`` (uint16/uint32), when given, receives their positions."""
    if not is_scalar(imm):
        raise NkiError("nc_match_replace8 imm must be a scalar")
    dsts = [dst_tile(dst)] + ([] if dst_idx is None else [dst_tile(dst_idx, "dst_idx")])
    emit(
        "match_replace8",
        dsts,
        [isa._tile(data, "data"), isa._tile(vals, "vals")],
        {"imm": float(imm)},
    )


def topk(val_dst, idx_dst, src, n, sorted=False, name=None):
    """GpSimd: in each group of 16 partitions, the k largest of the first ``n`` bf16 elements of
    src's snake layout (element s at partition s % 16, column s // 16) into val_dst, their
    indices into idx_dst (uint32), in the same snake layout; k is val_dst's free size."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise NkiError(f"topk n must be an int, got {n!r}")
    emit(
        "topk",
        [dst_tile(val_dst, "val_dst"), dst_tile(idx_dst, "idx_dst")],
        [isa._tile(src, "src")],
        {"n": n, "sorted": bool(sorted)},
    )


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None):
    """NeuronCore-v3+ GpSimd: on partitions 0, 16, ..., 112, the positions of src's nonzero
    elements (+ index_offset), then padding_val, then their count (dst has one more element per
    partition than src); dst's other partitions are left as they are."""
    nc_at_least(3, "nisa.nonzero_with_count")
    for value, what in ((index_offset, "index_offset"), (padding_val, "padding_val")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise NkiError(f"nonzero_with_count {what} must be an int, got {value!r}")
    emit(
        "nonzero_with_count",
        [dst_tile(dst)],
        [isa._tile(src, "src")],
        {"index_offset": index_offset, "padding_val": padding_val},
    )
