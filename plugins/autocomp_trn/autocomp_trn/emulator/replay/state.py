"""What a replay holds: the tensors, the loops in progress, validated access patterns, and the
core an instruction acts on (its engines' registers, its schedule, the compiler's merges)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes, hardware as hw
from ..cost import CostReport, Regions, Scheduler
from ..hardware import Generation
from ..indexing import NkiError
from ..vectorize import Lane
from .fusions import Fusions
from .memory import Memory

INT_SENTINEL = 4  # what the official simulator puts in fresh integer allocations


class TraceRefused(NkiError):
    """The trace broke a rule; the message names it (and the kernel line when known)."""


def fail(message: str, code: str, line: int = 0):
    raise TraceRefused(message, code, line)


def as_int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what} is not an integer")
    return x


@dataclass
class TensorState:
    tid: int
    shape: tuple[int, ...]
    dtype: str
    buffer: str
    par_axis: int
    name: str
    path: tuple
    size: int
    itemsize: int
    line: int
    data: np.ndarray | None = None
    is_input: bool = False
    writes: int = 0
    regions: Regions | None = None
    # on-chip geometry: partitions per block, free elements per partition
    parts: int = 0
    free: int = 0
    written: np.ndarray | None = None  # for v2 auto-accumulating matmuls

    @property
    def label(self) -> str:
        return self.name or f"{self.buffer} tensor {list(self.shape)}"


@dataclass
class Frame:
    kind: str
    n: int
    line: int
    fid: int
    depth: int
    it: int = -1
    owners: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass
class ReplayResult:
    outputs: list[
        np.ndarray
    ]  # (seeds, *shape) each, in the kernel's output dtype; empty in trace-only mode
    cost: CostReport
    events: int
    cost_s: float = 0.0  # of the replay's time, what the cost model took


class Core:
    """The NeuronCore an instruction acts on: where in the trace the replay is, whether it
    computes data, ScalarE's reduce registers, the schedule, and the merges the compiler makes."""

    def __init__(self, gen: Generation, seeds: int, numeric: bool) -> None:
        self.gen, self.seeds, self.numeric = gen, seeds, numeric
        self.line = 0
        self.index = 0  # of the event being replayed
        self.sched = Scheduler(gen)
        self.memory = Memory(gen)  # on-chip bytes in use, and when freed ones are free
        self.dead: set[int] = set()  # instructions nothing reads (dead.py): priced apart
        self.cost_s = 0.0
        self.fusions = Fusions()
        self.fused_end: dict[int, float] = {}  # fused activation event -> when it ends
        self.lanes: dict[int, Lane] = {}  # instructions of vectorized loops (vectorize.py)
        # (loop, position) -> the fused instruction's elements and operands so far
        self.vector_pending: dict[tuple[int, int], tuple[float, list, list]] = {}
        # ScalarE's 128 reduce registers, one per partition (per seed); NaN until an activation
        # resets them, so a kernel reading them first computes NaN as from unwritten memory
        self.act_regs = np.full((seeds, hw.PMAX), np.nan, dtype=np.float32)


class AP:
    """A validated access pattern."""

    __slots__ = ("dims", "hi", "offset", "t")

    def __init__(self, t: TensorState, offset: int, dims: list[tuple[int, int]], hi: int) -> None:
        self.t, self.offset, self.dims, self.hi = t, offset, dims, hi

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.dims)

    def same(self, other: AP) -> bool:
        return self.t is other.t and self.offset == other.offset and self.dims == other.dims

    def view(self) -> np.ndarray:
        arr = self.t.data
        item = arr.itemsize
        return as_strided(
            arr[:, self.offset :],
            shape=(arr.shape[0], *self.shape),
            strides=(arr.strides[0], *(s * item for _, s in self.dims)),
        )

    def view_of(self, flat: np.ndarray) -> np.ndarray:
        item = flat.itemsize
        return as_strided(
            flat[self.offset :], shape=self.shape, strides=tuple(s * item for _, s in self.dims)
        )

    def read(self) -> np.ndarray:
        """The operand as fp32 (a view, not a copy, when it is stored as fp32: never written to)."""
        view = self.view()
        return view if view.dtype == np.float32 else view.astype(np.float32)

    def write(self, value: np.ndarray, acc: bool = False) -> None:
        view = self.view()
        with np.errstate(all="ignore"):
            if acc:
                value = view.astype(np.float32) + value
            if self.t.dtype not in dtypes.FLOATS:
                value = to_int(value, view.dtype)
            view[...] = value


def to_int(value, dtype: np.dtype) -> np.ndarray:
    """A float-to-integer cast as the engines and the NKI 0.6 simulator make it: round to
    nearest, ties to even, then saturate to the type's range (NaN becomes 0)."""
    info = np.iinfo(dtype)
    wide = np.nan_to_num(np.asarray(value, dtype=np.float64), nan=0.0)
    return np.clip(np.rint(wide), info.min, info.max).astype(dtype)


def free(ap: AP) -> int:
    """Elements per partition of an access."""
    return math.prod(ap.shape[1:])
