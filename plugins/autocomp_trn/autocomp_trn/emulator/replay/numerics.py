"""What instructions compute: the ALU operations, activation functions and reductions of the
engines (in fp32, nki.md section 4), and the scans and affine patterns some instructions make."""

from __future__ import annotations

import math

import numpy as np

ALU = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "equal": lambda a, b: (a == b).astype(np.float32),
    "not_equal": lambda a, b: (a != b).astype(np.float32),
    "greater": lambda a, b: (a > b).astype(np.float32),
    "greater_equal": lambda a, b: (a >= b).astype(np.float32),
    "less": lambda a, b: (a < b).astype(np.float32),
    "less_equal": lambda a, b: (a <= b).astype(np.float32),
    "bitwise_and": lambda a, b: (a.astype(np.int64) & b.astype(np.int64)).astype(np.float32),
    "bitwise_or": lambda a, b: (a.astype(np.int64) | b.astype(np.int64)).astype(np.float32),
    "bitwise_xor": lambda a, b: (a.astype(np.int64) ^ b.astype(np.int64)).astype(np.float32),
}
REDUCE = {"add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod, "mean": np.mean}
#: what an activation does to ScalarE's per-partition reduce registers (nisa.reduce_cmd)
REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce")
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor"}


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float32])(x)


ACT = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    # nl.gelu is the exact GELU, x * Phi(x); the tanh form is nl.gelu_apprx_tanh
    "gelu": lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "square": np.square,
    "abs": np.abs,
    "reciprocal": lambda x: 1.0 / x,
    "sin": np.sin,
    "cos": np.cos,
    "softplus": lambda x: np.logaddexp(0, x),
    "erf": erf,
    "copy": lambda x: x,
    "negative": np.negative,
}


def linear_scan(a: np.ndarray, b: np.ndarray, r0: np.ndarray, chunk: int = 64) -> np.ndarray:
    """``r[i] = a[i] * r[i-1] + b[i]`` along the last axis, in fp64, chunk by chunk: a scan inside every
    chunk at once, then each chunk's carry-in times the running product of its ``a``."""
    n = a.shape[-1]
    nc = -(-n // chunk)
    pad = nc * chunk - n
    a64 = np.pad(a.astype(np.float64), [(0, 0)] * (a.ndim - 1) + [(0, pad)], constant_values=1.0)
    b64 = np.pad(b.astype(np.float64), [(0, 0)] * (b.ndim - 1) + [(0, pad)])
    a64 = a64.reshape(*a.shape[:-1], nc, chunk)
    b64 = b64.reshape(*b.shape[:-1], nc, chunk)
    local = np.empty_like(b64)
    r = np.zeros(a64.shape[:-1])
    for j in range(chunk):
        r = a64[..., j] * r + b64[..., j]
        local[..., j] = r
    reach = np.cumprod(a64, axis=-1)
    carry = r0.astype(np.float64)
    for c in range(nc):
        local[..., c, :] += carry[..., None] * reach[..., c, :]
        carry = local[..., c, -1]
    return local.reshape(*a.shape[:-1], nc * chunk)[..., :n].astype(np.float32)


def affine_values(shape, coeffs, const) -> np.ndarray:
    v = np.full(shape, const, dtype=np.float64)
    for a, c in enumerate(coeffs):
        if c:
            idx = np.arange(shape[a]).reshape([-1 if b == a else 1 for b in range(len(shape))])
            v = v + c * idx
    return v.astype(np.float32)
