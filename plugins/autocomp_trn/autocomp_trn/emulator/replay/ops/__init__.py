"""One function per instruction, in a table keyed by the trace's instruction name. Each takes the
core, the instruction's validated destinations and sources, and its attributes."""

from __future__ import annotations

from .elementwise import (
    activation,
    affine_select,
    iota,
    memset,
    reciprocal,
    select,
    tensor_copy,
    tensor_scalar,
    tensor_tensor,
)
from .movement import dma, matmul, pbroadcast, transpose
from .reductions import partition_reduce, scan, tensor_reduce

OPS = {
    "dma": dma,
    "matmul": matmul,
    "transpose": transpose,
    "pbroadcast": pbroadcast,
    "tensor_tensor": tensor_tensor,
    "tensor_scalar": tensor_scalar,
    "activation": activation,
    "tensor_reduce": tensor_reduce,
    "tensor_copy": tensor_copy,
    "memset": memset,
    "iota": iota,
    "affine_select": affine_select,
    "select": select,
    "scan": scan,
    "reciprocal": reciprocal,
    "partition_reduce": partition_reduce,
}
