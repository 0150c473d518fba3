"""The candidate side of the emulator: opaque tensor handles that record an instruction trace.

A kernel runs against these objects inside the sandboxed tracing process. They hold shapes,
dtypes and buffers, never data: converting one to NumPy, truth-testing it or iterating over it
is an error, so no host-side computing can stand in for NKI instructions. Each NKI call appends
one event to the trace; the trusted replay (``replay/``) re-checks every rule, computes the
outputs from the inputs and costs the schedule. Nothing here is trusted.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from typing import Any

from . import MAX_EVENTS, dtypes
from .hardware import PMAX
from .indexing import (
    DynSlice,
    IndexExpr,
    Mask,
    NkiError,
    reshape_pattern,
    row_major_strides,
    subscript,
)

HBM, SBUF, PSUM = "hbm", "sbuf", "psum"

#: the ``nki.language`` calls a tile's operators and assignments are (``t + u`` is ``nl.add``),
#: by name; ``language``, which builds on this module, fills it when it is imported
LANGUAGE: dict[str, Callable] = {}


class Tracer:
    """Records one kernel call. Events are plain lists so the trace serializes as JSON."""

    def __init__(
        self, filename: str = "", max_events: int = MAX_EVENTS, current: bool = False
    ) -> None:
        self.events: list[list | None] = []
        self.tensors: list[Tensor] = []
        self.filename = filename
        self.max_events = max_events
        self.loop_depth = 0
        # the kernel speaks the current API (``import nki``), not the legacy one
        self.current = current
        self.fp8_flavours: set[str] = set()

    def line(self) -> int:
        """The candidate's source line that made the current call (0 when not found)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno
            frame = frame.f_back
        return 0

    def emit(self, event: list) -> int:
        if len(self.events) >= self.max_events:
            raise NkiError(
                f"the kernel emitted more than {self.max_events} instructions and loop events; "
                "this emulator refuses traces that long",
                "err_trace_too_long",
            )
        self.events.append(event)
        return len(self.events) - 1

    def new_tensor(
        self, shape, dtype, buffer: str, par_axis: int | None, name: str = "", line: int = 0
    ) -> Tensor:
        shape = tuple(int(n) for n in shape)
        if any(n <= 0 for n in shape):
            raise NkiError(f"tensor shape {shape} has an empty dimension")
        dtype = dtypes.name_of(dtype)
        if self.current:
            self._verify(shape, dtype, buffer, par_axis)
        t = Tensor(self, len(self.tensors), shape, dtype, buffer, par_axis, name)
        self.tensors.append(t)
        t.alloc_event = self.emit(
            [
                "alloc",
                t.tid,
                list(shape),
                t.dtype,
                buffer,
                -1 if par_axis is None else par_axis,
                line or self.line(),
            ]
        )
        return t

    def _verify(self, shape, dtype: str, buffer: str, par_axis: int | None) -> None:
        """The current toolchain's verification rules an allocation can break."""
        if buffer != HBM and par_axis is not None and shape[par_axis] > PMAX:
            raise NkiError(
                f"verification error (NKI 0.6): a {buffer.upper()} tensor of shape {list(shape)} "
                f"has {shape[par_axis]} partitions, more than the {PMAX} the hardware has",
                "err_num_partition_exceed_arch_limit",
            )
        if dtype in dtypes.FP8_E4M3_FLAVOURS:
            self.fp8_flavours.add(dtype)
            if len(self.fp8_flavours) > 1:
                raise NkiError(
                    "verification error (NKI 0.4): the OCP float8_e4m3fn and the legacy "
                    "float8_e4m3 must not be mixed in one kernel",
                    "err_mixed_fp8_flavours",
                )

    def to_json(self, returned: list[int], inputs: list[int]) -> dict[str, Any]:
        return {
            "version": 1,
            "inputs": inputs,
            "outputs": returned,
            "events": [e for e in self.events if e is not None],
        }


class Tensor:
    """A memory allocation (HBM tensor or on-chip tile with optional v1 block dims)."""

    __slots__ = (
        "alloc_event",
        "buffer",
        "consumed",
        "dtype",
        "fresh_event",
        "hbm_kind",
        "is_input",
        "name",
        "par_axis",
        "shape",
        "strides",
        "tid",
        "tracer",
    )

    def __init__(self, tracer, tid, shape, dtype, buffer, par_axis, name) -> None:
        self.tracer, self.tid, self.shape, self.dtype = tracer, tid, shape, dtype
        self.buffer, self.par_axis, self.name = buffer, par_axis, name
        self.alloc_event = -1
        self.fresh_event = -1  # index of the op that made this tile as its result, while unused
        self.consumed = False
        self.strides = row_major_strides(shape)
        self.is_input = False
        self.hbm_kind = ""  # "shared" or "private" for HBM tensors the kernel allocated

    def full(self) -> Tile:
        return Tile(self, 0, list(zip(self.shape, self.strides)))


#: NkiTensor methods the NKI documentation lists that this emulator does not model
NOT_EMULATED = {
    "view": "a reinterpretation of the tensor's bytes as another dtype",
    "indirect": "a gather/scatter view for compute instructions (NeuronCore-v4)",
    "vector_select": "a per-partition selection view",
}


class NotEmulated(NkiError, AttributeError):
    """A documented method the emulator lacks: a one-line refusal to the kernel, and still
    absent to ``hasattr``."""


class Tile:
    """What a kernel holds: a view (access pattern) of a tensor. Opaque: no data inside."""

    __slots__ = ("accumulated", "bounds", "dims", "offset", "tensor")
    __array_priority__ = 1000  # np.float32(2) * tile -> our __rmul__, not NumPy

    def __init__(self, tensor: Tensor, offset: int, dims: list[tuple[int, int]]) -> None:
        self.tensor, self.offset, self.dims = tensor, offset, dims
        self.accumulated = False
        self.bounds: dict[
            int, tuple[int, int]
        ] = {}  # axis -> index range inside the tensor (masked access)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.dims)

    @property
    def dtype(self):
        return dtypes.DTYPES[self.tensor.dtype]

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.tensor.dtype)

    @property
    def buffer(self) -> str:
        return self.tensor.buffer

    def ap(
        self,
        pattern=None,
        offset: int = 0,
        scalar_offset=None,
        vector_offset=None,
        indirect_dim=None,
        dtype=None,
    ):
        """With no pattern: the access as the trace records it. With one: NKI's
        ``NkiTensor.ap(pattern, offset)``, a raw access pattern over the tensor's row-major
        elements (``[[stride, count], ...]``, ``offset`` in elements), which overrides the view."""
        if pattern is None:
            return [self.tensor.tid, self.offset, [[n, s] for n, s in self.dims]]
        if any(x is not None for x in (scalar_offset, vector_offset, indirect_dim, dtype)):
            raise NkiError(
                "NkiTensor.ap with scalar_offset, vector_offset, indirect_dim or dtype (dynamic "
                "or reinterpreting access) is not emulated",
                "err_unsupported_api",
            )
        if not self.is_whole():
            raise NkiError(
                "NkiTensor.ap overrides the whole access pattern: call it on the tensor itself, "
                "not on a view of it (composing it with a view is not emulated)",
                "err_unsupported_api",
            )
        return self._view(offset, raw_pattern(self.tensor, pattern, offset))

    def get_pattern(self) -> list[list[int]]:
        """The view's access pattern as ``[[stride, count], ...]``."""
        return [[s, n] for n, s in self.dims]

    def is_contiguous(self) -> bool:
        """Whether the view walks one contiguous run of the tensor's storage in order."""
        return self._contiguous()

    def is_whole(self) -> bool:
        t = self.tensor
        return self.offset == 0 and self.dims == list(zip(t.shape, t.strides))

    # ------------------------------------------------------------------ views
    def __getitem__(self, key) -> Tile:
        if self.bounds:
            raise NkiError(
                "index a tile that reaches past its tensor only once, directly in the instruction",
                "err_tensor_access_out_of_bound",
            )
        if any(isinstance(k, Tile) for k in (key if isinstance(key, tuple) else (key,))):
            raise NkiError(
                "indexing with a tile of indices (an indirect DMA gather or scatter) is not "
                "emulated: the indices live on the device, and this emulator has no indirect DMA",
                "err_unsupported_api",
            )
        bounds: dict[int, tuple[int, int]] = {}
        offset, dims = subscript(self.offset, self.dims, key, bounds)
        if not dims:
            raise NkiError(
                "indexing down to a single element gives no tile: keep at least a [1, 1] tile",
                "err_insufficient_rank",
            )
        tile = Tile(self.tensor, offset, dims)
        tile.bounds = bounds
        return tile

    def reshape(self, shape) -> Tile:
        shape = tuple(int(n) for n in shape)
        size = 1
        for n in shape:
            size *= n
        if size != _prod(self.shape):
            raise NkiError(
                f"reshape must keep the element count (NKI 0.5): a view of shape "
                f"{list(self.shape)} has {_prod(self.shape)} elements, {list(shape)} has {size}",
                "err_reshape_element_count",
            )
        if self._contiguous():
            return Tile(self.tensor, self.offset, list(zip(shape, row_major_strides(shape))))
        # a strided view (a column slice, a stepped slice) reshapes as a view too: NkiTensor
        # views share storage and copy nothing, so the result must be one access pattern
        dims = reshape_pattern(self.dims, shape)
        if dims is None:
            raise NkiError(
                f"reshape of this view to {list(shape)} is not an access pattern: it would merge "
                f"dims of {list(self.shape)} that are not contiguous with each other in storage "
                "(NkiTensor views copy nothing; split a dim with reshape_dim, or copy the view "
                "into a tile first)",
                "err_reshape_not_a_view",
            )
        if self.buffer != HBM and dims[0] != self.dims[0]:
            raise NkiError(
                "reshape of a strided view cannot change the partition dimension (dim 0) of an "
                "on-chip tensor",
                "err_partition_dim_view",
            )
        return self._view(self.offset, dims)

    def _contiguous(self) -> bool:
        expect = 1
        for n, s in reversed(self.dims):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    def broadcast_to(self, shape) -> Tile:
        return LANGUAGE["broadcast_to"](self, shape=shape)

    def astype(self, dtype) -> Tile:
        return LANGUAGE["copy"](self, dtype=dtype)

    def expand_dims(self, axis: int) -> Tile:
        if axis == 0:
            raise NkiError("expand_dims works on free dims only (axis >= 1)")
        dims = list(self.dims)
        dims.insert(axis, (1, 0))
        return Tile(self.tensor, self.offset, dims)

    # ------------------------------------------------------------------ NkiTensor views (NKI 0.5)
    def _dim(self, dim: int, what: str, partition_ok: bool = True) -> int:
        if isinstance(dim, bool) or not isinstance(dim, int) or not -self.ndim <= dim < self.ndim:
            raise NkiError(f"{what}: dim {dim!r} is not a dimension of a rank-{self.ndim} view")
        dim %= self.ndim
        if dim == 0 and not partition_ok and self.buffer != HBM:
            raise NkiError(
                f"{what} cannot change the partition dimension (dim 0) of an on-chip tensor",
                "err_partition_dim_view",
            )
        return dim

    def _view(self, offset: int, dims: list[tuple[int, int]]) -> Tile:
        if self.bounds:
            raise NkiError(
                "take views of a tile that reaches past its tensor only once, directly in the "
                "instruction",
                "err_tensor_access_out_of_bound",
            )
        if not dims:
            raise NkiError("a view keeps at least one dimension", "err_insufficient_rank")
        return Tile(self.tensor, offset, dims)

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> Tile:
        """The elements ``start:end:step`` of one dimension."""
        dim = self._dim(dim, "slice")
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index: int) -> Tile:
        """One index of a dimension, which the view drops."""
        dim = self._dim(dim, "select", partition_ok=False)
        n, s = self.dims[dim]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise NkiError(
                f"select index {index!r} is out of range for a dimension of size {n}",
                "err_tensor_access_out_of_bound",
            )
        return self._view(self.offset + index * s, self.dims[:dim] + self.dims[dim + 1 :])

    def permute(self, *dims) -> Tile:
        """The dimensions in a new order (``permute(0, 2, 1)`` or ``permute((0, 2, 1))``)."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        if sorted(dims) != list(range(self.ndim)):
            raise NkiError(f"permute needs each of the {self.ndim} dimensions once, got {dims}")
        if dims[0] != 0 and self.buffer != HBM:
            raise NkiError(
                "permute cannot move the partition dimension (dim 0) of an on-chip tensor: "
                "transpose it with nisa.nc_transpose or nisa.dma_transpose",
                "err_partition_dim_view",
            )
        return self._view(self.offset, [self.dims[d] for d in dims])

    def broadcast(self, dim: int, size: int) -> Tile:
        """A size-1 dimension repeated ``size`` times (stride 0, no copy)."""
        dim = self._dim(dim, "broadcast", partition_ok=False)
        if self.dims[dim][0] != 1:
            raise NkiError(
                f"broadcast expands a size-1 dimension; dim {dim} has size {self.dims[dim][0]}"
            )
        dims = list(self.dims)
        dims[dim] = (int(size), 0)
        return self._view(self.offset, dims)

    def expand_dim(self, dim: int) -> Tile:
        """A new size-1 dimension at position ``dim``."""
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= self.ndim:
            raise NkiError(f"expand_dim: position {dim!r} is outside 0..{self.ndim}")
        if dim == 0 and self.buffer != HBM:
            raise NkiError(
                "expand_dim cannot insert before the partition dimension of an on-chip tensor",
                "err_partition_dim_view",
            )
        return self._view(self.offset, self.dims[:dim] + [(1, 0)] + self.dims[dim:])

    def squeeze_dim(self, dim: int) -> Tile:
        """Drop a size-1 dimension."""
        dim = self._dim(dim, "squeeze_dim", partition_ok=False)
        if self.dims[dim][0] != 1:
            raise NkiError(
                f"squeeze_dim drops a size-1 dimension; dim {dim} has size {self.dims[dim][0]}"
            )
        return self._view(self.offset, self.dims[:dim] + self.dims[dim + 1 :])

    def reshape_dim(self, dim: int, shape) -> Tile:
        """Split one dimension into ``shape`` (same element count)."""
        dim = self._dim(dim, "reshape_dim", partition_ok=False)
        shape = tuple(int(n) for n in shape)
        n, s = self.dims[dim]
        if _prod(shape) != n:
            raise NkiError(
                f"reshape_dim must keep the element count: dim {dim} has {n}, {list(shape)} has "
                f"{_prod(shape)}",
                "err_reshape_element_count",
            )
        inner = [(m, st * s) for m, st in zip(shape, row_major_strides(shape))]
        return self._view(self.offset, self.dims[:dim] + inner + self.dims[dim + 1 :])

    def flatten_dims(self, start_dim: int, end_dim: int) -> Tile:
        """Merge the dimensions ``start_dim..end_dim`` (inclusive) into one; they must be
        contiguous with each other."""
        lo = self._dim(start_dim, "flatten_dims", partition_ok=False)
        hi = self._dim(end_dim, "flatten_dims")
        if hi < lo:
            raise NkiError(f"flatten_dims: end_dim {end_dim} comes before start_dim {start_dim}")
        group = self.dims[lo : hi + 1]
        for (_, s_outer), (n_inner, s_inner) in itertools.pairwise(group):
            if s_outer != n_inner * s_inner:
                raise NkiError(
                    f"flatten_dims: dims {lo}..{hi} are not contiguous with each other in storage"
                )
        merged = (_prod(n for n, _ in group), group[-1][1])
        return self._view(self.offset, self.dims[:lo] + [merged] + self.dims[hi + 1 :])

    def rearrange(self, pattern: str) -> Tile:
        """An einops-style reordering such as ``"p a b -> p b a"`` (a permutation of named dims)."""
        try:
            src, dst = (side.split() for side in pattern.split("->"))
        except ValueError:
            raise NkiError(f"rearrange pattern {pattern!r} is not 'names -> names'") from None
        if len(src) != self.ndim or sorted(src) != sorted(dst) or len(set(src)) != len(src):
            raise NkiError(
                f"rearrange: this emulator supports permutations of the {self.ndim} named "
                f"dimensions only (got {pattern!r})",
                "err_unsupported_api",
            )
        return self.permute(*(src.index(name) for name in dst))

    # ------------------------------------------------------------------ refusals
    def __getattr__(self, name: str):
        if name in NOT_EMULATED:
            raise NotEmulated(
                f"NkiTensor.{name} ({NOT_EMULATED[name]}) is not emulated", "err_unsupported_api"
            )
        raise AttributeError(f"'NkiTensor' object has no attribute {name!r}")

    def __bool__(self):
        raise NkiError(
            "the truth value of a tile is ambiguous: control flow cannot depend on tensor values",
            "err_ambiguous_tensor_truth_value",
        )

    def __array__(self, *args, **kwargs):
        raise NkiError(
            "NKI tensors are not NumPy arrays: their data lives in device memory. "
            "Compute with nki.language / nki.isa instructions",
            "err_unsupported_memory",
        )

    def __iter__(self):
        raise NkiError("a tile cannot be iterated over: index it with slices or nl.arange")

    def __len__(self):
        return self.dims[0][0]

    def __float__(self):
        raise NkiError(
            "a tile has no Python value: its data lives in device memory",
            "err_dynamic_control_flow_not_supported",
        )

    __int__ = __index__ = __complex__ = __float__

    def __repr__(self) -> str:
        return f"<nki tile {self.shape} {self.tensor.dtype} in {self.tensor.buffer}>"

    __hash__ = object.__hash__

    # ------------------------------------------------------------------ assignment
    def __setitem__(self, key, value) -> None:
        dst = self[key] if key is not Ellipsis else Tile(self.tensor, self.offset, list(self.dims))
        if (
            isinstance(value, Tile)
            and value.accumulated
            and value.tensor is dst.tensor
            and value.offset == dst.offset
            and value.dims == dst.dims
        ):
            return  # the write-back half of `t[i] += x`: already done in place
        LANGUAGE["assign"](dst, value)

    # operators map to nki.language calls (as the real tracer does)
    def _bin(name, reverse=False):
        def method(self, other):
            fn = LANGUAGE[name]
            return fn(other, self) if reverse else fn(self, other)

        return method

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("subtract"), _bin("subtract", True)
    __mul__, __rmul__ = _bin("multiply"), _bin("multiply", True)
    __truediv__, __rtruediv__ = _bin("divide"), _bin("divide", True)
    __pow__ = _bin("power")
    __lt__, __le__ = _bin("less"), _bin("less_equal")
    __gt__, __ge__ = _bin("greater"), _bin("greater_equal")
    __and__, __or__, __xor__ = _bin("bitwise_and"), _bin("bitwise_or"), _bin("bitwise_xor")

    def __eq__(self, other):  # type: ignore[override]
        return LANGUAGE["equal"](self, other)

    def __ne__(self, other):  # type: ignore[override]
        return LANGUAGE["not_equal"](self, other)

    def __neg__(self):
        return LANGUAGE["negative"](self)

    def __iadd__(self, other):
        LANGUAGE["accumulate"](self, other, "add")
        self.accumulated = True
        return self

    def _inplace(name):
        def method(self, other):
            LANGUAGE["assign"](self, LANGUAGE[name](self, other))
            self.accumulated = True
            return self

        return method

    __isub__, __imul__, __itruediv__ = (
        _inplace("subtract"),
        _inplace("multiply"),
        _inplace("divide"),
    )
    del _bin, _inplace


def raw_pattern(tensor: Tensor, pattern, offset) -> list[tuple[int, int]]:
    """The dims of ``tensor.ap(pattern, offset)``, checked: integer ``[stride, count]`` pairs
    that stay inside the tensor; on chip the first pair walks whole partitions (its stride is
    one partition's row) and the rest stay inside a partition."""
    try:
        pairs = [(int(n), int(s)) for s, n in pattern]
    except (TypeError, ValueError):
        raise NkiError(
            f"NkiTensor.ap pattern must be a list of [stride, count] pairs, got {pattern!r}"
        ) from None
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise NkiError(f"NkiTensor.ap offset must be an integer, got {offset!r}")
    if not pairs or any(n <= 0 for n, _ in pairs):
        raise NkiError(f"NkiTensor.ap pattern {pattern!r} needs at least one pair, counts >= 1")
    size = _prod(tensor.shape)
    lo = offset + sum(min(0, (n - 1) * s) for n, s in pairs)
    hi = offset + sum(max(0, (n - 1) * s) for n, s in pairs)
    if lo < 0 or hi >= size:
        raise NkiError(
            f"NkiTensor.ap pattern {pattern!r} at offset {offset} reaches elements {lo}..{hi} "
            f"of a tensor of {size}",
            "err_tensor_access_out_of_bound",
        )
    if tensor.buffer != HBM:
        row = size // tensor.shape[0]
        inner = offset % row + sum(max(0, (n - 1) * s) for n, s in pairs[1:])
        if pairs[0][1] != row:
            raise NkiError(
                f"NkiTensor.ap on an on-chip tensor: the first pair walks partitions (stride "
                f"{row}, one partition's row), got {pattern!r}",
                "err_partition_dim_view",
            )
        if any(s < 0 for _, s in pairs[1:]) or inner >= row:
            raise NkiError(
                f"NkiTensor.ap pattern {pattern!r} at offset {offset} runs past the end of a "
                f"partition's {row} elements",
                "err_tensor_access_out_of_bound",
            )
    return pairs


def _prod(shape) -> int:
    out = 1
    for n in shape:
        out *= n
    return out


#: the tracer of the kernel call in progress (one at a time per process)
CURRENT: list[Tracer] = []


def tracer() -> Tracer:
    if not CURRENT:
        raise NkiError("NKI instructions can only run inside a kernel call")
    return CURRENT[-1]


__all__ = [
    "HBM",
    "PSUM",
    "SBUF",
    "DynSlice",
    "IndexExpr",
    "Mask",
    "NkiError",
    "Tensor",
    "Tile",
    "Tracer",
    "tracer",
]
