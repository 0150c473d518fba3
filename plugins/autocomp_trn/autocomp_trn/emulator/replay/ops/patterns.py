"""The current API's GpSimd pattern instructions: iota (values of an affine pattern) and
affine_select (a tile where the pattern compares true with 0, a constant elsewhere). The pattern
is ``offset + partition * channel_multiplier + sum(step * index)`` over up to four nested
[step, num] levels (outermost first) that together cover every element of a partition."""

from __future__ import annotations

import math

import numpy as np

from .. import pricing
from ..pricing import POOL_FIXED
from ..rules import elementwise_checks, onchip, shape_eq
from ..state import AP, Core, as_int, fail, free

_COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
}


def _values(core: Core, d: AP, attrs: dict, what: str) -> np.ndarray:
    """The pattern's value for every element of ``d``: [partitions, free elements], int64."""
    pattern = attrs["pattern"]
    if not isinstance(pattern, list) or not 0 < len(pattern) <= 4:
        raise ValueError("pattern")
    levels = [(as_int(step, "step"), as_int(num, "num")) for step, num in pattern]
    if any(num <= 0 for _, num in levels):
        raise ValueError("pattern")
    count = math.prod(num for _, num in levels)
    if count != free(d):
        fail(
            f"{what} pattern covers {count} elements per partition, dst has {free(d)}",
            "err_invalid_access_pattern",
            core.line,
        )
    v = np.zeros(1, dtype=np.int64)
    for step, num in levels:  # row-major: the last level varies fastest
        v = (v[:, None] + step * np.arange(num, dtype=np.int64)[None, :]).reshape(-1)
    parts = d.dims[0][0]
    channel = as_int(attrs["channel_multiplier"], "channel_multiplier")
    return (
        as_int(attrs["offset"], "offset")
        + channel * np.arange(parts, dtype=np.int64)[:, None]
        + v[None, :]
    )


def iota_pattern(core: Core, dsts, srcs, attrs) -> None:
    (d,) = dsts
    if srcs:
        raise ValueError("iota operands")
    elementwise_checks("pool", dsts, [], "iota", core.line)
    onchip(d, "iota output", core.line, ("sbuf",))
    values = _values(core, d, attrs, "iota")
    if core.numeric:
        d.write(values.astype(np.float64).reshape((1, *d.shape)))  # exact for int32 dsts
    pricing.compute(core, "pool", "iota", free(d), dsts, [], extra_cycles=POOL_FIXED["iota"])


def affine_select_pattern(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    compare = _COMPARE.get(attrs["cmp"])
    on_false = attrs["on_false"]
    if compare is None or isinstance(on_false, bool) or not isinstance(on_false, (int, float)):
        raise ValueError("affine_select")
    elementwise_checks("pool", dsts, srcs, "affine_select", core.line)
    shape_eq(s, d, "affine_select", core.line)
    keep = compare(_values(core, d, attrs, "affine_select"), 0)
    if core.numeric:
        x = s.read().reshape(core.seeds, *keep.shape)
        out = np.where(keep[None], x, np.float32(on_false))
        d.write(out.reshape((core.seeds, *d.shape)))
    pricing.compute(
        core, "pool", "affine_select", free(d), dsts, srcs, extra_cycles=POOL_FIXED["affine_select"]
    )
