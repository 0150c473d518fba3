"""The constants and types of ``nki.language`` (buffers, dtypes, ``par_dim``, ``tile_size``,
index expressions) and the calls that create tensors."""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes, hardware
from ..indexing import DynSlice, IndexExpr, MGrid, NkiError
from ..recording import emit, is_scalar, shape_and_par
from ..tracer import HBM, PSUM, SBUF, Tile, tracer


class Buffer(str):
    """A memory location for ``nl.ndarray(..., buffer=...)``; an HBM one says whether every
    program of the SPMD grid sees it (``shared``) or only its own (``private``)."""

    def __new__(cls, name: str, kind: str = "") -> Buffer:
        buffer = super().__new__(cls, name)
        buffer.kind = kind
        return buffer


sbuf, psum = Buffer(SBUF), Buffer(PSUM)
shared_hbm, private_hbm = Buffer(HBM, "shared"), Buffer(HBM, "private")
hbm = private_hbm  # the documented alias

float32 = dtypes.DTYPES["float32"]
bfloat16 = dtypes.DTYPES["bfloat16"]
float16 = dtypes.DTYPES["float16"]
float8_e4m3 = dtypes.DTYPES["float8_e4m3"]
float8_e5m2 = dtypes.DTYPES["float8_e5m2"]
int8, uint8 = dtypes.DTYPES["int8"], dtypes.DTYPES["uint8"]
int16, uint16 = dtypes.DTYPES["int16"], dtypes.DTYPES["uint16"]
int32, uint32 = dtypes.DTYPES["int32"], dtypes.DTYPES["uint32"]
bool_ = np.dtype(np.bool_)


class _TileSize:
    pmax = hardware.PMAX
    psum_fmax = hardware.PSUM_FMAX
    gemm_stationary_fmax = hardware.GEMM_STATIONARY_FMAX
    gemm_moving_fmax = hardware.GEMM_MOVING_FMAX
    bn_stats_fmax = hardware.BN_STATS_FMAX
    psum_num_banks = hardware.PSUM_BANKS
    total_available_sbuf_size = 192 * 1024  # set per generation by the tracing process


tile_size = _TileSize()
mgrid = MGrid()


def arange(start: int, stop: int | None = None) -> IndexExpr:
    if stop is None:
        start, stop = 0, start
    if not isinstance(start, int) or not isinstance(stop, int) or stop <= start:
        raise NkiError(f"nl.arange needs integer bounds with stop > start, got {start}, {stop}")
    return IndexExpr.axis(stop - start, start)


def ds(start: int, size: int) -> DynSlice:
    return DynSlice(start, size)


def ndarray(shape, dtype, *, buffer=None, name: str = "", **_ignored) -> Tile:
    buffer = sbuf if buffer is None else buffer
    if buffer not in (SBUF, PSUM, HBM):
        raise NkiError(f"unknown buffer {buffer!r} (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm)")
    if tracer().current and not isinstance(buffer, Buffer):
        raise NkiError(
            f"verification error (NKI 0.3): buffer={buffer!r} is a string; pass nl.sbuf, "
            "nl.psum, nl.shared_hbm or nl.private_hbm",
            "err_string_buffer",
        )
    if buffer == HBM:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        tensor = tracer().new_tensor(shape, dtype, HBM, None, name)
        tensor.hbm_kind = getattr(buffer, "kind", "")
        return tensor.full()
    shape, par = shape_and_par(shape)
    return tracer().new_tensor(shape, dtype, buffer, par, name).full()


def full(shape, fill_value, dtype, *, buffer=None, name: str = "", **_ignored) -> Tile:
    if (buffer or SBUF) == HBM:
        raise NkiError(
            "HBM tensors cannot have init values", "err_hbm_tensor_with_init_value_not_supported"
        )
    out = ndarray(shape, dtype, buffer=buffer, name=name)
    if not is_scalar(fill_value):
        raise NkiError("fill_value must be a scalar")
    blocks = out.shape[: out.tensor.par_axis]
    for index in itertools.product(*(range(n) for n in blocks)):  # block dims: one tile each
        emit("memset", [out[index] if index else out], [], {"value": float(fill_value)})
    return out


def zeros(shape, dtype, *, buffer=None, name: str = "", **kw) -> Tile:
    return full(shape, 0.0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, *, buffer=None, name: str = "", **kw) -> Tile:
    return full(shape, 1.0, dtype, buffer=buffer, name=name)


def zeros_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or _buffer_of(a), name=name)


def ones_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return ones(a.shape, dtype or a.dtype, buffer=buffer or _buffer_of(a), name=name)


def empty_like(a: Tile, dtype=None, *, buffer=None, name: str = "") -> Tile:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or _buffer_of(a), name=name)


def _buffer_of(a: Tile) -> Buffer:
    """The ``nl`` buffer a tensor lives in."""
    if a.buffer == HBM:
        return shared_hbm if a.tensor.hbm_kind == "shared" else private_hbm
    return sbuf if a.buffer == SBUF else psum
