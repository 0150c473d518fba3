"""``nki.language`` (v1 and the shared parts of v2), recorded as trace events.

Each call checks what it must to build its result (shapes that cannot combine, wrong argument
types) and records one instruction (``recording.emit``); the hardware rules (partition limits,
memories, engine operand rules, capacities, loop dependencies) are enforced by the trusted
replay, once. The calls live in this package's modules by kind: ``creation`` (constants, types
and new tensors), ``loops``, ``assignment`` (a tile's ``=`` and ``+=``), ``elementwise``,
``reductions``, ``movement`` (loads and stores) and ``tensor_engine`` (matmul and transpose,
built on ``nki.isa``).
"""

# ruff: noqa: F401 (this module is the namespace: what it imports, it exports through PUBLIC)
from __future__ import annotations

import numpy as np

from .. import tracer as _tracer
from ..indexing import FALSE_MASK
from ..recording import ACT_FUNCS, ALU_OPS, par_dim
from .assignment import accumulate, assign
from .creation import (
    arange,
    bfloat16,
    bool_,
    ds,
    empty_like,
    float8_e4m3,
    float8_e5m2,
    float16,
    float32,
    full,
    hbm,
    int8,
    int16,
    int32,
    mgrid,
    ndarray,
    ones,
    ones_like,
    private_hbm,
    psum,
    sbuf,
    shared_hbm,
    tile_size,
    uint8,
    uint16,
    uint32,
    zeros,
    zeros_like,
)
from .elementwise import (
    abs,
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    broadcast_to,
    copy,
    cos,
    divide,
    equal,
    erf,
    exp,
    gelu,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    reciprocal,
    relu,
    rsqrt,
    sigmoid,
    silu,
    sin,
    softplus,
    sqrt,
    square,
    subtract,
    tanh,
    where,
)
from .loops import affine_range, sequential_range, static_range
from .movement import device_print, load, load_transpose2d, store
from .reductions import max, mean, min, prod, sum
from .tensor_engine import matmul, transpose


def _register() -> None:
    pairs = {
        "add": (add, np.add),
        "subtract": (subtract, np.subtract),
        "multiply": (multiply, np.multiply),
        "divide": (divide, np.divide, np.true_divide),
        "maximum": (maximum, np.maximum, max, np.max, np.amax),
        "minimum": (minimum, np.minimum, min, np.min, np.amin),
        "power": (power, np.power),
        "equal": (equal, np.equal),
        "not_equal": (not_equal, np.not_equal),
        "greater": (greater, np.greater),
        "greater_equal": (greater_equal, np.greater_equal),
        "less": (less, np.less),
        "less_equal": (less_equal, np.less_equal),
        "bitwise_and": (bitwise_and, np.bitwise_and),
        "bitwise_or": (bitwise_or, np.bitwise_or),
        "bitwise_xor": (bitwise_xor, np.bitwise_xor),
        "mean": (mean,),
    }
    for name, fns in pairs.items():
        for fn in fns:
            ALU_OPS[id(fn)] = name
    for fn in (sum, np.sum):
        ALU_OPS[id(fn)] = "add"
    for fn in (prod, np.prod):
        ALU_OPS[id(fn)] = "multiply"
    acts = {
        "exp": (exp, np.exp),
        "log": (log, np.log),
        "tanh": (tanh, np.tanh),
        "sqrt": (sqrt, np.sqrt),
        "rsqrt": (rsqrt,),
        "sigmoid": (sigmoid,),
        "relu": (relu,),
        "gelu": (gelu,),
        "silu": (silu,),
        "square": (square, np.square),
        "abs": (abs, np.abs),
        "reciprocal": (reciprocal, np.reciprocal),
        "sin": (sin, np.sin),
        "cos": (cos, np.cos),
        "softplus": (softplus,),
        "erf": (erf,),
        "copy": (copy,),
        "negative": (negative, np.negative),
    }
    for name, fns in acts.items():
        for fn in fns:
            ACT_FUNCS[id(fn)] = name


_register()
# a tile's operators are these calls (as in the real tracer); the tracer, below this package,
# reaches them through this table
_tracer.LANGUAGE.update(
    add=add,
    subtract=subtract,
    multiply=multiply,
    divide=divide,
    power=power,
    less=less,
    less_equal=less_equal,
    greater=greater,
    greater_equal=greater_equal,
    bitwise_and=bitwise_and,
    bitwise_or=bitwise_or,
    bitwise_xor=bitwise_xor,
    equal=equal,
    not_equal=not_equal,
    negative=negative,
    assign=assign,
    accumulate=accumulate,
    broadcast_to=broadcast_to,
    copy=copy,
)

#: the public names of ``nki.language`` this emulator implements (the ISA text documents each)
PUBLIC = (
    "ndarray zeros ones full zeros_like ones_like empty_like par_dim arange mgrid ds tile_size "
    "affine_range sequential_range static_range sbuf psum hbm shared_hbm private_hbm float32 bfloat16 "
    "float16 float8_e4m3 float8_e5m2 int8 uint8 int16 uint16 int32 uint32 bool_ load store "
    "load_transpose2d copy broadcast_to matmul transpose add subtract multiply divide maximum minimum "
    "power negative equal not_equal greater greater_equal less less_equal bitwise_and bitwise_or "
    "bitwise_xor where exp log tanh sqrt rsqrt sigmoid relu gelu silu square abs reciprocal sin cos "
    "softplus erf sum max min prod mean device_print"
).split()
__all__ = [*PUBLIC, "FALSE_MASK"]
