"""``nki.isa`` as of NKI 0.8 (the current API): every instruction takes its destination first
(``dst``, or ``val_dst``/``idx_dst``), returns nothing, and has no ``dtype=``/``mask=``.

Each call checks what it needs to record a well-formed event (argument types, the documented
enumerations, ranks); the hardware rules are enforced again by the trusted replay
(``replay/ops``, one function per event), which never trusts what this side recorded. The rooms:
``common`` (enums and argument checks), ``compute`` (TensorE, VectorE, ScalarE, GpSimd
arithmetic), ``selection`` (patterns, predicates, shuffles), ``search`` (statistics, top-k
searches), ``dma`` and ``retired`` (names the current API removed or moved)."""

from __future__ import annotations

from . import retired
from .common import (
    dge_mode,
    dma_engine,
    engine,
    get_nc_version,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)
from .compute import (
    activate2,
    activation,
    activation_reduce,
    exponential,
    memset,
    nc_matmul,
    nc_transpose,
    reciprocal,
    scalar_tensor_tensor,
    tensor_copy,
    tensor_partition_reduce,
    tensor_reduce,
    tensor_scalar,
    tensor_scalar_cumulative,
    tensor_scalar_reduce,
    tensor_tensor,
    tensor_tensor_scan,
)
from .dma import dma_copy, dma_transpose
from .search import (
    bn_aggr,
    bn_stats,
    max8,
    nc_find_index8,
    nc_match_replace8,
    nonzero_with_count,
    topk,
)
from .selection import (
    affine_select,
    iota,
    nc_n_gather,
    nc_stream_shuffle,
    range_select,
    select_reduce,
    tensor_copy_predicated,
)

globals().update(retired.FUNCTIONS)

#: the instructions (destination first)
INSTRUCTIONS = (
    "nc_matmul nc_transpose tensor_tensor tensor_scalar scalar_tensor_tensor tensor_scalar_reduce "
    "tensor_reduce tensor_partition_reduce tensor_copy activation activation_reduce activate2 "
    "exponential reciprocal tensor_tensor_scan memset iota affine_select bn_stats bn_aggr max8 "
    "nc_find_index8 nc_match_replace8 tensor_copy_predicated range_select select_reduce "
    "nc_stream_shuffle tensor_scalar_cumulative topk nc_n_gather nonzero_with_count dma_copy "
    "dma_transpose"
).split()
#: the enumerations and target queries
ENUMS = (
    "engine tensor_engine vector_engine scalar_engine gpsimd_engine unknown_engine reduce_cmd "
    "dge_mode oob_mode matmul_perf_mode dma_engine nc_version get_nc_version"
).split()
#: names the current API removed or moved: calling one says where it went
RETIRED = list(retired.FUNCTIONS)
PUBLIC = INSTRUCTIONS + ENUMS + RETIRED

__all__ = [
    "ENUMS",
    "INSTRUCTIONS",
    "PUBLIC",
    "RETIRED",
    "activate2",
    "activation",
    "activation_reduce",
    "affine_select",
    "bn_aggr",
    "bn_stats",
    "dge_mode",
    "dma_copy",
    "dma_engine",
    "dma_transpose",
    "engine",
    "exponential",
    "get_nc_version",
    "gpsimd_engine",
    "iota",
    "matmul_perf_mode",
    "max8",
    "memset",
    "nc_find_index8",
    "nc_match_replace8",
    "nc_matmul",
    "nc_n_gather",
    "nc_stream_shuffle",
    "nc_transpose",
    "nc_version",
    "nonzero_with_count",
    "oob_mode",
    "range_select",
    "reciprocal",
    "reduce_cmd",
    "scalar_engine",
    "scalar_tensor_tensor",
    "select_reduce",
    "tensor_copy",
    "tensor_copy_predicated",
    "tensor_engine",
    "tensor_partition_reduce",
    "tensor_reduce",
    "tensor_scalar",
    "tensor_scalar_cumulative",
    "tensor_scalar_reduce",
    "tensor_tensor",
    "tensor_tensor_scan",
    "topk",
    "unknown_engine",
    "vector_engine",
]
