"""NKI data types: names, NumPy storage types and promotion.

bf16 and fp8 are real NumPy dtypes from ml_dtypes, so storing into them rounds to nearest
even exactly as the engines do on write; every engine computes in fp32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: name -> NumPy dtype used to store it
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
    "tfloat32": np.dtype(np.float32),  # tf32 is stored as fp32 (the PE reads 10 mantissa bits)
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32),
    "bool_": np.dtype(np.uint8),
}
FLOATS = {"float32", "bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2"}
LOW_PRECISION = {"bfloat16", "float16", "float8_e4m3", "float8_e5m2"}  # 8/16-bit PE inputs


def itemsize(name: str) -> int:
    return DTYPES[name].itemsize


def name_of(dtype) -> str:
    """The NKI name of a dtype given as a name, a NumPy dtype or a NumPy scalar type."""
    if isinstance(dtype, str):
        if dtype in DTYPES:
            return dtype
        raise TypeError(f"unknown NKI dtype {dtype!r}")
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown NKI dtype {dtype!r}") from None
    for name, known in DTYPES.items():
        if known == np_dtype and name not in ("tfloat32", "bool_"):
            return name
    if np_dtype == np.dtype(bool):
        return "bool_"
    if np_dtype in (np.dtype(np.float64), np.dtype(np.int64)):
        raise TypeError(f"{np_dtype} is not an NKI dtype: the engines have no 64-bit types")
    raise TypeError(f"unknown NKI dtype {dtype!r}")


def promote(a: str, b: str) -> str:
    """Result type of a binary op on two tiles (nki.md 2.10)."""
    if a == b:
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        pair = {a, b}
        if pair == {"float16", "bfloat16"}:
            return "float32"
        if pair == {"float8_e4m3", "float8_e5m2"}:
            return "bfloat16"
        return a if itemsize(a) >= itemsize(b) else b
    if {a, b} == {"int32", "uint32"}:
        return "float32"
    return a if itemsize(a) >= itemsize(b) else b
