"""``nki.language``'s TensorE calls, built on the ``nki.isa`` instructions."""

from __future__ import annotations

from .. import isa
from ..indexing import NkiError
from ..tracer import Tile
from .elementwise import copy


def matmul(x, y, *, transpose_x: bool = False, mask=None, **_kw) -> Tile:
    """``x @ y`` into a new PSUM tile (fp32). Without ``transpose_x`` an extra TensorE transpose of
    ``x`` is inserted; with it, ``x`` is already [K, M]."""
    if not transpose_x:
        xt = transpose(x)
        x = copy(xt)
    return isa.nc_matmul(x, y, mask=mask)


def transpose(x, *, dtype=None, mask=None, **_kw) -> Tile:
    """2-D transpose on TensorE; the result is a PSUM tile."""
    if not isinstance(x, Tile) or x.ndim != 2:
        raise NkiError("nl.transpose takes a 2-D tile", "err_exceed_max_supported_dimension")
    return isa.nc_transpose(x, dtype=dtype, mask=mask)
