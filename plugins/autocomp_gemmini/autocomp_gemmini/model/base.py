"""What every part of the model shares, without numpy: errors, configurations, counters.

The lowest module of the model: the machine (`machine.GemminiBase`), the LOOP_* state
machines (`loops.py`), memory and both models import it, and it imports none of them.
Keeping it free of numpy lets a simulation on the compiled model start without importing
numpy (a tenth of a second or more per evaluation) unless a LOOP_* command or the Python
model needs it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import GemminiConfig


class GemminiError(Exception):
    """A command the hardware cannot execute as written (the candidate's fault)."""


class BadAddress(Exception):
    """A DMA access outside the simulated main memory."""


def f32_from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


@dataclass(frozen=True)
class ArrayConfig:
    """The hardware sizes the model needs. A `GemminiConfig` has the same fields; this plain
    copy lets the simulator start without importing pydantic."""

    pe_dim: int
    dtype: str
    spad_rows: int
    acc_rows: int
    max_block_len: int
    max_block_len_acc: int
    spad_banks: int = 4

    @classmethod
    def of(cls, cfg: GemminiConfig | ArrayConfig) -> ArrayConfig:
        return cls(**{f.name: getattr(cfg, f.name) for f in fields(cls)})


@dataclass
class LoadConfig:
    stride: int = 0  # bytes between DRAM rows
    scale: float = 1.0
    shrunk: bool = False  # accumulator mvin of elem_t instead of acc_t
    block_stride: int = 0  # scratchpad rows between DIM-wide blocks (0 = DIM)


@dataclass
class StoreConfig:
    stride: int = 0
    act: int = 0
    scale: float = 1.0
    pool_stride: int = 0


@dataclass
class Counters:
    commands: dict[str, int] = field(default_factory=dict)
    macs: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    #: rows the DMA moved (mvin from memory, mvout), by the bytes in a row: each row is at least
    #: one memory request, which is what the feedback's model limits look at (model_limits.py)
    dma_rows: dict[int, int] = field(default_factory=dict)

    def count(self, name: str, n: int = 1) -> None:
        self.commands[name] = self.commands.get(name, 0) + n

    def count_dma(self, row_bytes: int, rows: int) -> None:
        self.dma_rows[row_bytes] = self.dma_rows.get(row_bytes, 0) + rows
