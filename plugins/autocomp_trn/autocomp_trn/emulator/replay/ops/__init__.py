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
from .fused import activate2, exponential, scalar_tensor_tensor, tensor_scalar_reduce
from .movement import dma, dma_transpose, matmul, pbroadcast, transpose
from .patterns import affine_select_pattern, iota_pattern
from .reductions import cumulative, partition_reduce, scan, tensor_reduce
from .selection import copy_predicated, n_gather, range_select, select_reduce, stream_shuffle
from .statistics import (
    bn_aggr,
    bn_stats,
    find_index8,
    match_replace8,
    max8,
    nonzero_with_count,
    topk,
)

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
    # the current API's (NKI 0.8) own instructions
    "dma_transpose": dma_transpose,
    "scalar_tensor_tensor": scalar_tensor_tensor,
    "tensor_scalar_reduce": tensor_scalar_reduce,
    "exponential": exponential,
    "activate2": activate2,
    "iota_pattern": iota_pattern,
    "affine_select_pattern": affine_select_pattern,
    "bn_stats": bn_stats,
    "bn_aggr": bn_aggr,
    "max8": max8,
    "find_index8": find_index8,
    "match_replace8": match_replace8,
    "copy_predicated": copy_predicated,
    "range_select": range_select,
    "select_reduce": select_reduce,
    "stream_shuffle": stream_shuffle,
    "tensor_scalar_cumulative": cumulative,
    "topk": topk,
    "n_gather": n_gather,
    "nonzero_with_count": nonzero_with_count,
}
