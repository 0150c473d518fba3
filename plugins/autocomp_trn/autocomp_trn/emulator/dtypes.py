"""NKI data types: names, NumPy storage types and promotion.

bf16 and fp8 are real NumPy dtypes from ml_dtypes, so storing into them rounds to nearest
even exactly as the engines do on write; every engine computes in fp32.
"""

from __future__ import annotations

import functools

import numpy as np

#: name -> the NumPy type that stores it; a string names an ml_dtypes type
_STORAGE: dict[str, type | str] = {
    "float32": np.float32,
    "bfloat16": "bfloat16",
    "float16": np.float16,
    "tfloat32": np.float32,  # tf32 is stored as fp32 (the PE reads 10 mantissa bits)
    "float8_e4m3": "float8_e4m3",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fn": "float8_e4m3fn",  # OCP fp8 (current API, NKI 0.4): no inf, one NaN
    "float8_e8m0fnu": "float8_e8m0fnu",  # MX scale: an unsigned power of two (NKI 0.5)
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "bool_": np.uint8,
}
_ML_DTYPE_BYTES = {
    "bfloat16": 2,
    "float8_e4m3": 1,
    "float8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e8m0fnu": 1,
}
#: bytes per element, known without loading ml_dtypes (the engine's bounds need only these)
ITEMSIZE: dict[str, int] = {
    name: _ML_DTYPE_BYTES[name] if isinstance(t, str) else np.dtype(t).itemsize
    for name, t in _STORAGE.items()
}


@functools.cache
def table() -> dict[str, np.dtype]:
    """name -> NumPy dtype used to store it (``DTYPES``)."""
    import ml_dtypes  # most of a second to load: only processes that hold tensors need it

    return {
        name: np.dtype(getattr(ml_dtypes, t) if isinstance(t, str) else t)
        for name, t in _STORAGE.items()
    }


def __getattr__(name: str):
    if name == "DTYPES":  # built on first use
        return table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FP8 = {"float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu"}
FLOATS = {"float32", "bfloat16", "float16", "tfloat32", *FP8}
LOW_PRECISION = {"bfloat16", "float16", *FP8}  # 8/16-bit PE inputs
#: the two 4-bit-exponent fp8 formats a kernel must not mix (NKI 0.4)
FP8_E4M3_FLAVOURS = {"float8_e4m3", "float8_e4m3fn"}


def itemsize(name: str) -> int:
    return ITEMSIZE[name]


def name_of(dtype) -> str:
    """The NKI name of a dtype given as a name, a NumPy dtype or a NumPy scalar type."""
    if isinstance(dtype, str):
        if dtype in _STORAGE:
            return dtype
        raise TypeError(f"unknown NKI dtype {dtype!r}")
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown NKI dtype {dtype!r}") from None
    for name, known in table().items():
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
        if pair <= FP8:  # two different fp8 formats meet in bf16
            return "bfloat16"
        return a if itemsize(a) >= itemsize(b) else b
    if {a, b} == {"int32", "uint32"}:
        return "float32"
    return a if itemsize(a) >= itemsize(b) else b
