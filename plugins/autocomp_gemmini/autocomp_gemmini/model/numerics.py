"""Gemmini arithmetic: saturation, scaling with round-to-nearest-even, rounding shifts."""

from __future__ import annotations

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap to int32 (the accumulator's adders do not saturate)."""
    return np.asarray(x, np.int64).astype(np.int32)


def scale_int(x: np.ndarray, scale: float, lo: int, hi: int) -> np.ndarray:
    """`nearbyint((float)x * scale)` in float32, then clamped to [lo, hi] (int64 result)."""
    y = np.rint(np.asarray(x).astype(np.float32) * np.float32(scale)).astype(np.float64)
    return np.clip(y, lo, hi).astype(np.int64)


def rounding_shift(x: np.ndarray, shift: int) -> np.ndarray:
    """Arithmetic right shift rounding to nearest, ties to even (the ISA's ROUNDING_RIGHT_SHIFT)."""
    x = np.asarray(x, np.int64)
    if shift <= 0:
        return x << -shift if shift < 0 else x
    half_bit = (x >> (shift - 1)) & 1
    rest = (x & ((1 << (shift - 1)) - 1)) != 0 if shift > 1 else np.zeros_like(x, bool)
    odd = (x >> shift) & 1
    return (x >> shift) + (half_bit & (rest | (odd != 0)))


def activate(x: np.ndarray, act: int) -> np.ndarray:
    if act == 1:  # RELU
        return np.maximum(x, 0)
    return x


def to_elem_int(x: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(x, np.int64), INT8_MIN, INT8_MAX).astype(np.int8)
