"""The harness's seeded inputs, mirrored in numpy: every input buffer is filled from a
counter-based hash (`harness_hash` in harness/harness.h, the fills in harness_common.c), so the gold results are
computed from the same values without trusting anything the candidate's process reports.
"""

from __future__ import annotations

import numpy as np


def hash_stream(seed: int, n: int) -> np.ndarray:
    """uint32 element i of stream `seed` (the harness's `harness_hash`)."""
    i = np.arange(n, dtype=np.uint32)
    x = i * np.uint32(0x9E3779B1) + np.uint32((seed * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x2C1B3C6D)
    x ^= x >> np.uint32(12)
    x *= np.uint32(0x297A2D39)
    x ^= x >> np.uint32(15)
    return x


def fill_elem(seed: int, n: int, is_float: bool) -> np.ndarray:
    x = hash_stream(seed, n)
    if is_float:
        return (x >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 8388608.0) - np.float32(
            1.0
        )
    return (x >> np.uint32(24)).astype(np.uint8).view(np.int8)


def fill_acc(seed: int, n: int, is_float: bool) -> np.ndarray:
    x = hash_stream(seed, n)
    if is_float:
        return (x >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 8388608.0) - np.float32(
            1.0
        )
    return x.view(np.int32) >> 14
