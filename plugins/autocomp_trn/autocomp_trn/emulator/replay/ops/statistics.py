"""Per-partition statistics and searches on VectorE: bn_stats / bn_aggr (mean and variance),
max8 (the 8 largest values), nc_find_index8 (where 8 values first occur) and
nc_match_replace8 (replace them); and GpSimd's topk and nonzero_with_count."""

from __future__ import annotations

import numpy as np

from ... import dtypes, hardware as hw
from .. import pricing
from ..rules import elementwise_checks, onchip
from ..state import AP, Core, fail, free
from .generations import require


def _per_partition(core: Core, ap: AP) -> np.ndarray:
    """``ap`` as [seeds, partitions, free elements] in fp32."""
    return ap.read().reshape(core.seeds, ap.dims[0][0], -1)


def _same_partitions(core: Core, d: AP, s: AP, what: str) -> None:
    if d.dims[0][0] != s.dims[0][0]:
        fail(
            f"{what}: dst has {d.dims[0][0]} partitions, the input {s.dims[0][0]}",
            "err_num_partition_mismatch",
            core.line,
        )


def _free_size(core: Core, ap: AP, want: int, what: str) -> None:
    if free(ap) != want:
        fail(
            f"{what} must hold {want} elements per partition, got {list(ap.shape)}",
            "err_num_partition_mismatch",
            core.line,
        )


def _moments(x: np.ndarray) -> list[np.ndarray]:
    """(count, mean, variance * count) of ``x`` along its last axis."""
    n = x.shape[-1]
    if n == 0:
        zero = np.zeros(x.shape[:-1], np.float32)
        return [zero, zero, zero]
    mean = x.mean(axis=-1, dtype=np.float32)
    m2 = np.square(x - mean[..., None]).sum(axis=-1, dtype=np.float32)
    return [np.full(x.shape[:-1], n, np.float32), mean, m2]


def bn_stats(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    elementwise_checks("dve", dsts, srcs, "bn_stats", core.line)
    _same_partitions(core, d, s, "bn_stats")
    _free_size(core, d, 6, "bn_stats dst")
    if free(s) > hw.BN_STATS_FMAX:
        fail(
            f"bn_stats reads at most {hw.BN_STATS_FMAX} elements per partition "
            f"(nl.tile_size.bn_stats_fmax), got {free(s)}",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    if core.numeric:
        x = _per_partition(core, s)
        stats = _moments(x[..., 0::2]) + _moments(x[..., 1::2])
        d.write(np.stack(stats, axis=-1).reshape((core.seeds, *d.shape)))
    pricing.compute(core, "dve", "bn_stats", free(s), dsts, srcs, k=1.0)


def bn_aggr(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    elementwise_checks("dve", dsts, srcs, "bn_aggr", core.line)
    _same_partitions(core, d, s, "bn_aggr")
    _free_size(core, d, 2, "bn_aggr dst")
    if free(s) % 3:
        fail(
            f"bn_aggr reads (count, mean, variance*count) triples: {free(s)} elements per "
            "partition is not a multiple of 3",
            "err_num_partition_mismatch",
            core.line,
        )
    if core.numeric:
        t = _per_partition(core, s).reshape(core.seeds, s.dims[0][0], -1, 3)
        count, mean, m2 = t[..., 0], t[..., 1], t[..., 2]
        with np.errstate(all="ignore"):
            n = count.sum(axis=-1)
            total = (count * mean).sum(axis=-1) / n
            var = (m2 + count * np.square(mean - total[..., None])).sum(axis=-1) / n
        d.write(np.stack([total, var], axis=-1).reshape((core.seeds, *d.shape)))
    # nisa docs: max(MIN_II, 13 * N / 3) cycles
    pricing.compute(core, "dve", "bn_aggr", free(s), dsts, srcs, k=13 / 3)


def max8(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    elementwise_checks("dve", dsts, srcs, "max8", core.line)
    _same_partitions(core, d, s, "max8")
    _free_size(core, d, 8, "max8 dst")
    if not 8 <= free(s) <= 16384:
        fail(
            f"max8 reads 8 to 16384 elements per partition, got {free(s)}",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    if core.numeric:
        x = _per_partition(core, s)
        top = -np.sort(-x, axis=-1)[..., :8]  # descending
        d.write(top.reshape((core.seeds, *d.shape)))
    pricing.compute(core, "dve", "max8", free(s), dsts, srcs, k=1.0)


#: the largest value of each index dtype: what nc_find_index8 writes for a value not found
_NOT_FOUND = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF}


def find_index8(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s, vals) = dsts, srcs
    elementwise_checks("dve", dsts, srcs, "nc_find_index8", core.line)
    _same_partitions(core, d, s, "nc_find_index8")
    _same_partitions(core, vals, s, "nc_find_index8 vals")
    _free_size(core, d, 8, "nc_find_index8 dst")
    _free_size(core, vals, 8, "nc_find_index8 vals")
    if d.t.dtype not in _NOT_FOUND:
        fail(
            f"nc_find_index8 writes uint16 or uint32 indices, dst is {d.t.dtype}",
            "err_unsupported_dtype",
            core.line,
        )
    if not 8 <= free(s) <= 16384:
        fail(
            f"nc_find_index8 reads 8 to 16384 elements per partition, got {free(s)}",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    if core.numeric:
        x, v = _per_partition(core, s), _per_partition(core, vals)
        index, _ = _match8(x, v, range(8), _NOT_FOUND[d.t.dtype])
        d.view()[...] = index.reshape((core.seeds, *d.shape)).astype(d.t.data.dtype)
    pricing.compute(core, "dve", "find_index8", free(s), dsts, srcs, k=1.0)


def _match8(x: np.ndarray, v: np.ndarray, order, missing: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair each of the 8 values ``v[..., i]`` (taken in ``order``) with the first position of
    ``x`` that holds it and no earlier value took, so duplicate values get distinct positions.
    Returns the positions ([..., 8], ``missing`` where none is left) and the taken mask."""
    taken = np.zeros(x.shape, dtype=bool)
    index = np.full(v.shape, missing, dtype=np.int64)
    lanes = np.indices(x.shape[:-1])
    for i in order:
        hit = (x == v[..., i : i + 1]) & ~taken
        found = hit.any(axis=-1)
        first = hit.argmax(axis=-1)
        index[..., i] = np.where(found, first, missing)
        taken[(*lanes, first)] |= found
    return index, taken


def match_replace8(core: Core, dsts, srcs, attrs) -> None:
    """nc_match_replace8: ``data`` with the first occurrence of each of the 8 ``vals`` replaced
    by ``imm`` (vals taken from the last to the first, as the hardware does with duplicates);
    the second destination, when given, receives the positions."""
    d, (s, vals) = dsts[0], srcs
    imm = attrs["imm"]
    if isinstance(imm, bool) or not isinstance(imm, (int, float)) or len(dsts) > 2:
        raise ValueError("match_replace8")
    elementwise_checks("dve", dsts, srcs, "nc_match_replace8", core.line)
    _same_partitions(core, d, s, "nc_match_replace8")
    _same_partitions(core, vals, s, "nc_match_replace8 vals")
    _free_size(core, vals, 8, "nc_match_replace8 vals")
    _free_size(core, d, free(s), "nc_match_replace8 dst")
    idx = dsts[1] if len(dsts) == 2 else None
    if idx is not None:
        _same_partitions(core, idx, s, "nc_match_replace8 dst_idx")
        _free_size(core, idx, 8, "nc_match_replace8 dst_idx")
        if idx.t.dtype not in _NOT_FOUND:
            fail(
                f"nc_match_replace8 writes uint16 or uint32 indices, dst_idx is {idx.t.dtype}",
                "err_unsupported_dtype",
                core.line,
            )
    if core.numeric:
        x, v = _per_partition(core, s), _per_partition(core, vals)
        missing = _NOT_FOUND.get(idx.t.dtype if idx is not None else "uint32")
        index, taken = _match8(x, v, range(7, -1, -1), missing)
        d.write(np.where(taken, np.float32(imm), x).reshape((core.seeds, *d.shape)))
        if idx is not None:
            idx.view()[...] = index.reshape((core.seeds, *idx.shape)).astype(idx.t.data.dtype)
    pricing.compute(core, "dve", "match_replace8", free(s), dsts, srcs, k=1.0)


def topk(core: Core, dsts, srcs, attrs) -> None:
    """GpSimd topk: each group of 16 partitions holds one bf16 problem in a snake layout
    (element s at partition s % 16, column s // 16; the first ``n`` count). The k largest
    (k = val_dst's free size) go to val_dst and their snake indices (uint32) to idx_dst, in the
    same snake layout, largest first (the emulator's order, also for sorted=False); the slots
    past k in the last written column are undefined: NaN and all ones here."""
    (vals, idx), (s,) = dsts, srcs
    n = attrs["n"]
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError("n")
    elementwise_checks("pool", dsts, srcs, "topk", core.line)
    for ap in (vals, idx, s):
        onchip(ap, "topk operand", core.line, ("sbuf",))
    parts, k, columns = s.dims[0][0], free(vals), free(s)
    problems = [
        (s.t.dtype != "bfloat16" or vals.t.dtype != "bfloat16", "src and val_dst must be bfloat16"),
        (idx.t.dtype != "uint32", "idx_dst must be uint32"),
        (vals.dims[0][0] != parts or idx.dims[0][0] != parts, "operands must share partitions"),
        (free(idx) != k, "idx_dst must have val_dst's free size"),
        (parts % 16, "the partition count must be a multiple of 16"),
        (not 8 <= n < 65536, "n must be in [8, 65536)"),
        (not 1 <= k <= n or k >= 32768, "k (val_dst's free size) must be in [1, 32768) and <= n"),
        (columns < -(-n // 16), "src must hold ceil(n / 16) columns"),
    ]
    for bad, why in problems:
        if bad:
            fail(f"topk: {why}", "err_invalid_topk", core.line)
    if core.numeric:
        x = _per_partition(core, s)[:, :, : -(-n // 16)]
        groups = parts // 16
        # snake order: column-major inside each group of 16 partitions
        snake = x.reshape(core.seeds, groups, 16, -1).transpose(0, 1, 3, 2)
        snake = snake.reshape(core.seeds, groups, -1)[:, :, :n]
        order = np.argsort(-snake, axis=-1, kind="stable")[:, :, :k]
        best = np.take_along_axis(snake, order, axis=-1)
        slots = -(-k // 16) * 16
        pad = slots - k
        best = np.concatenate([best, np.full((*best.shape[:2], pad), np.nan, np.float32)], -1)
        where = np.concatenate([order, np.full((*order.shape[:2], pad), 0xFFFFFFFF)], -1)

        def unsnake(a):  # [seeds, groups, slots] -> [seeds, partitions, slots // 16]
            return (
                a.reshape(core.seeds, groups, -1, 16)
                .transpose(0, 1, 3, 2)
                .reshape(core.seeds, parts, -1)
            )

        cols = slots // 16
        for ap, result in ((vals, unsnake(best)), (idx, unsnake(where))):
            out = ap.view().reshape(core.seeds, parts, -1).copy()  # columns past cols: kept
            out[:, :, :cols] = result.astype(out.dtype)
            ap.view()[...] = out.reshape((core.seeds, *ap.shape))
    # nisa docs: 4 * n + k GpSimd cycles per partition
    pricing.compute(core, "pool", "topk", 4 * n + k, dsts, srcs, k=1.0)


def nonzero_with_count(core: Core, dsts, srcs, attrs) -> None:
    """NeuronCore-v3+ GpSimd: on partitions 0, 16, ..., 112 only (each GpSimd core's first),
    the positions of the nonzero elements (plus ``index_offset``), then ``padding_val``, then
    their count in the one extra last element; the other partitions of dst are left as they are."""
    require(core, "nonzero_with_count", "nki.isa.nonzero_with_count")
    (d,), (s,) = dsts, srcs
    offset, pad = attrs["index_offset"], attrs["padding_val"]
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (offset, pad)):
        raise ValueError("nonzero_with_count")
    elementwise_checks("pool", dsts, srcs, "nonzero_with_count", core.line)
    _same_partitions(core, d, s, "nonzero_with_count")
    _free_size(core, d, free(s) + 1, "nonzero_with_count dst")
    if d.t.dtype in dtypes.FLOATS:
        fail("nonzero_with_count writes integer indices", "err_unsupported_dtype", core.line)
    if core.numeric:
        x = _per_partition(core, s)
        out = d.view().reshape(core.seeds, d.dims[0][0], -1).astype(np.int64)
        for p in range(0, x.shape[1], 16):
            for seed in range(core.seeds):
                hits = np.flatnonzero(x[seed, p])
                row = np.full(free(s) + 1, pad, np.int64)
                row[: len(hits)] = hits + offset
                row[-1] = len(hits)
                out[seed, p] = row
        d.view()[...] = out.reshape((core.seeds, *d.shape)).astype(d.t.data.dtype)
    pricing.compute(core, "pool", "nonzero_with_count", free(s), dsts, srcs, k=1.0)
