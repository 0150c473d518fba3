"""The compiled model behind the Python model's interfaces (import through `native.load()`).

`NativeGemmini` is `functional.Gemmini` for int8 configurations with its primitive commands
in C++; `NativeTiming` is `timing.TimingModel`; `NativeMemory` is `memory.SpikeMemory`
without a Python call per 8-byte word. Nothing here imports numpy until something asks for
an array (a LOOP_* command, a test): the scratchpad and accumulator are plain byte buffers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ._native import Core, GuestMemory, Timing, mmu_type_capsule
from .base import (
    ArrayConfig,
    BadAddress,
    Counters,
    GemminiError,
    LoadConfig,
    StoreConfig,
)
from .machine import GemminiBase
from .timing import UNITS, TimingParams, TimingStats, summarize


class NativeTiming(Timing):
    """`TimingModel` in C++."""

    def __init__(
        self, params: TimingParams, spad_rows: int, acc_rows: int, spad_banks: int = 4
    ) -> None:
        super().__init__(params, spad_rows, acc_rows, spad_banks)

    @property
    def stats(self) -> TimingStats:
        busy, dep_wait, commands, queue_full, fence, fences = self._stats()
        return TimingStats(
            busy=dict(zip(UNITS, busy)),
            dep_wait=dict(zip(UNITS, dep_wait)),
            commands=dict(zip(UNITS, commands)),
            stall_queue_full=queue_full,
            stall_fence=fence,
            fences=fences,
        )

    def summary(self) -> dict[str, float]:
        return summarize(self.stats)


class NativeGemmini(Core, GemminiBase):
    """`functional.Gemmini` for int8 configurations; the LOOP_* commands still run in loops.py."""

    is_float = False

    def __init__(
        self, cfg: ArrayConfig, mem, timing: NativeTiming, delay_stores: bool = True
    ) -> None:
        if cfg.dtype != "int8":
            raise ValueError(f"the compiled model is int8 only, not {cfg.dtype}")
        self.cfg = cfg
        self.loop_ws_regs: dict[int, tuple[int, int]] = {}
        self.loop_conv_regs: dict[int, tuple[int, int]] = {}
        self._arrays: dict | None = None
        dim = cfg.pe_dim
        super().__init__(
            dim=dim,
            spad=bytearray(cfg.spad_rows * dim),
            acc=bytearray(4 * cfg.acc_rows * dim),
            spad_used=bytearray(cfg.spad_rows),
            acc_used=bytearray(cfg.acc_rows),
            timing=timing,
            mem=mem,
            read_rows=_read_rows,
            counters=Counters(),
            pending_writes=[],
            gemmini_error=GemminiError,
            max_cols_spad=dim * cfg.max_block_len,
            max_cols_acc=dim * cfg.max_block_len_acc,
            delay_stores=delay_stores,
        )

    @property
    def ld(self) -> list[LoadConfig]:
        return [LoadConfig(*self._ld(i)) for i in range(3)]

    @property
    def st(self) -> StoreConfig:
        return StoreConfig(*self._st())

    # numpy views of the buffers the C++ works on, made when first asked for
    @property
    def spad(self):
        return self._array("spad")

    @property
    def acc(self):
        return self._array("acc")

    @property
    def spad_used(self):
        return self._array("spad_used")

    @property
    def acc_used(self):
        return self._array("acc_used")

    @property
    def elem_dtype(self):
        import numpy as np

        return np.dtype(np.int8)

    @property
    def acc_dtype(self):
        import numpy as np

        return np.dtype(np.int32)

    def _array(self, name: str):
        if self._arrays is None:
            import numpy as np

            dim = self.dim
            self._arrays = {
                "spad": np.frombuffer(self.spad_buffer, np.int8).reshape(-1, dim),
                "acc": np.frombuffer(self.acc_buffer, np.int32).reshape(-1, dim),
                "spad_used": np.frombuffer(self.spad_used_buffer, np.bool_),
                "acc_used": np.frombuffer(self.acc_used_buffer, np.bool_),
            }
        return self._arrays[name]


def _read_rows(mem, addr: int, rows: int, row_bytes: int, stride: int):
    """memory.read_rows, for a memory other than NativeMemory (imported when first needed)."""
    from .memory import read_rows

    return read_rows(mem, addr, rows, row_bytes, stride)


class NativeMemory(GuestMemory):
    """`SpikeMemory` through Spike's MMU in C++: guest main memory is [base, base + size)."""

    def __init__(self, proc, base: int, size: int) -> None:
        # pybind11's cross-module protocol hands over the C++ pointer behind PySpike's `proc.mmu`
        mmu = proc.mmu._pybind11_conduit_v1_(
            pybind11_abi(), mmu_type_capsule(), b"raw_pointer_ephemeral"
        )
        if mmu is None:
            raise RuntimeError("PySpike's MMU object does not hand over its C++ pointer")
        super().__init__(mmu, base, size, BadAddress)

    def read_rows(self, addr: int, rows: int, row_bytes: int, stride: int):
        import numpy as np

        return np.frombuffer(self._read_rows(addr, rows, row_bytes, stride), np.uint8).reshape(
            rows, row_bytes
        )


def pybind11_abi() -> bytes:
    """The platform ABI tag PySpike's bindings were built with (part of pybind11's protocol)."""
    binary = Path(sys.modules["riscv._riscv"].__file__).read_bytes()
    match = re.search(rb"__pybind11_internals_v\d+_(\w+?)__", binary)
    if match is None:
        raise RuntimeError("cannot find pybind11's ABI tag in PySpike's bindings")
    return match.group(1)
