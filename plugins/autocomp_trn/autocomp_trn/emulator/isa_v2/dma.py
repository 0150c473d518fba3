"""The current ``nki.isa``'s DMA instructions: dma_copy and dma_transpose."""

from __future__ import annotations

from .. import isa
from ..indexing import NkiError
from ..recording import emit
from ..tracer import PSUM
from .common import (
    DgeMode,
    OobMode,
    as_enum,
    dge_mode,
    dst_tile,
    nc_at_least,
    oob_mode,
    unknown_engine,
)


def _dge(mode, what: str) -> str:
    name = as_enum(mode, DgeMode, f"{what} dge_mode").name
    if name == "hwdge":
        nc_at_least(3, f"{what} with dge_mode=hwdge")
    return name


def _priority(priority, what: str) -> None:
    """``priority=`` of a DMA transfer: a NeuronCore-v4 (Trn3) option, refused on older cores.
    Neuron 2.30's ``dma_transpose`` reference lists it (default None); the ``dma_copy`` pages we
    could read do not, nor do they give its values or its effect, so any value is accepted on
    Trn3 and the cost model ignores it (no documented effect on a transfer's time)."""
    if priority is not None:
        nc_at_least(4, f"{what} with priority=")


def dma_copy(
    dst,
    src,
    dst_rmw_op=None,
    oob_mode=oob_mode.error,
    dge_mode=dge_mode.unknown,
    engine=unknown_engine,
    name=None,
    priority=None,
):
    """DMA HBM <-> SBUF (no DMA from or to PSUM since NKI 0.3). The hardware DGE
    (dge_mode=hwdge) does not cast: src and dst dtypes must match."""
    d, s = dst_tile(dst), isa._tile(src, "src")
    as_enum(oob_mode, OobMode, "dma_copy oob_mode")
    _priority(priority, "dma_copy")
    dge = _dge(dge_mode, "dma_copy")
    if d.shape != s.shape:  # (v1 broadcast a smaller source implicitly)
        raise NkiError(
            f"dma_copy dst {list(d.shape)} and src {list(s.shape)} differ in shape: the current API "
            "copies element for element (broadcast a source explicitly with NkiTensor.broadcast)",
            "err_store_dst_shape_smaller_than_other_shape",
        )
    for tile, what in ((s, "source"), (d, "destination")):
        if tile.buffer == PSUM:
            raise NkiError(
                f"dma_copy {what} is in PSUM: there is no DMA from or to PSUM since NKI 0.3 "
                "(copy it to SBUF with nisa.tensor_copy)",
                "err_dma_psum",
            )
    if dge == "hwdge" and d.tensor.dtype != s.tensor.dtype:
        raise NkiError(
            f"dma_copy with dge_mode=hwdge cannot cast {s.tensor.dtype} to {d.tensor.dtype}: "
            "the hardware DGE needs matching dtypes (NKI 0.3)",
            "err_dma_dtype_mismatch",
        )
    # the replay re-checks the hardware DGE's rules
    isa.dma_copy(dst=d, src=s, dst_rmw_op=dst_rmw_op, dge=None if dge == "unknown" else dge)


#: the permutations dma_transpose supports, by rank
_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(
    dst,
    src,
    axes=None,
    dge_mode=dge_mode.unknown,
    oob_mode=oob_mode.error,
    name=None,
    priority=None,
):
    """DMA transpose from HBM or SBUF into SBUF: 2-D [1, 0], 3-D [2, 1, 0], 4-D [3, 1, 2, 0].
    ``axes`` must have exactly src's rank (NKI 0.4), and dst src's rank."""
    d, s = dst_tile(dst), isa._tile(src, "src")
    as_enum(oob_mode, OobMode, "dma_transpose oob_mode")
    _priority(priority, "dma_transpose")
    dge = _dge(dge_mode, "dma_transpose")
    if dge not in ("unknown", "hwdge"):
        raise NkiError(f"dma_transpose dge_mode must be unknown or hwdge, got {dge}")
    default = _DMA_TRANSPOSE_AXES.get(s.ndim)
    if default is None:
        raise NkiError(
            f"dma_transpose takes a 2-D, 3-D or 4-D src, got rank {s.ndim}",
            "err_dma_transpose_rank",
        )
    axes = default if axes is None else tuple(axes)
    if len(axes) != s.ndim or d.ndim != s.ndim:
        raise NkiError(
            f"dma_transpose axes {list(axes)} and dst rank {d.ndim} must match src rank {s.ndim} "
            "exactly (NKI 0.4)",
            "err_dma_transpose_rank",
        )
    if axes != default:
        raise NkiError(
            f"dma_transpose supports axes {list(default)} for a rank-{s.ndim} src, got {list(axes)}",
            "err_dma_transpose_rank",
        )
    attrs: dict = {"axes": list(axes)}
    if dge != "unknown":
        attrs["dge"] = dge
    emit("dma_transpose", [d], [s], attrs)
