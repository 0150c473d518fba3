"""Gemmini RoCC instruction set: funct codes and local-address fields.

Encodings follow the public Gemmini ISA description (gemmini v0.7-era `gemmini.h`):
opcode custom-3 (0x7B), funct7 selects the command, rs1/rs2 carry the operands.
Our header (`include/gemmini.h`) and our model (`model/`) both use these numbers, so a
program built here runs unchanged on a real Spike-with-Gemmini or FireSim.
"""

from __future__ import annotations

from functools import lru_cache

CONFIG = 0
MVIN2 = 1
MVIN = 2
MVOUT = 3
COMPUTE_PRELOADED = 4
COMPUTE_ACCUMULATED = 5
PRELOAD = 6
FLUSH = 7
LOOP_WS = 8
LOOP_WS_CONFIG_BOUNDS = 9
LOOP_WS_CONFIG_ADDRS_AB = 10
LOOP_WS_CONFIG_ADDRS_DC = 11
LOOP_WS_CONFIG_STRIDES_AB = 12
LOOP_WS_CONFIG_STRIDES_DC = 13
MVIN3 = 14
LOOP_CONV_WS = 15
LOOP_CONV_WS_CONFIG_1 = 16  # .. LOOP_CONV_WS_CONFIG_6 = 21
LOOP_CONV_WS_CONFIG_6 = 21

# Private commands of our model (not Gemmini's): the harness brackets the measured region
# and asks for the modelled cycle count. A real Gemmini never sees them (external mode
# builds the harness without GEMMINI_MODEL).
MODEL_READ_CYCLES = 120
MODEL_ROI_BEGIN = 121
MODEL_ROI_END = 122

# rs1[1:0] of CONFIG
CONFIG_EX = 0
CONFIG_LD = 1
CONFIG_ST = 2

OUTPUT_STATIONARY = 0
WEIGHT_STATIONARY = 1

NO_ACTIVATION = 0
RELU = 1

GARBAGE_ADDR = 0xFFFFFFFF
ADDR_LEN = 32
ACC_BIT = 1 << 31
ACCUMULATE_BIT = 1 << 30
FULL_BIT = 1 << 29
ROW_MASK = (1 << 29) - 1

NAMES = {
    CONFIG: "config",
    MVIN: "mvin",
    MVIN2: "mvin2",
    MVIN3: "mvin3",
    MVOUT: "mvout",
    COMPUTE_PRELOADED: "compute_preloaded",
    COMPUTE_ACCUMULATED: "compute_accumulated",
    PRELOAD: "preload",
    FLUSH: "flush",
    LOOP_WS: "loop_ws",
    LOOP_CONV_WS: "loop_conv_ws",
}


def bits(value: int, lo: int, width: int) -> int:
    return (value >> lo) & ((1 << width) - 1)


class LocalAddr:
    """A scratchpad or accumulator address (32 bits) with its flag bits decoded once."""

    __slots__ = ("accumulate", "full", "garbage", "is_acc", "raw", "row")

    def __init__(self, raw: int) -> None:
        self.raw = raw
        self.garbage = raw == GARBAGE_ADDR
        self.is_acc = bool(raw & ACC_BIT)
        self.accumulate = bool(raw & ACCUMULATE_BIT)
        self.full = bool(raw & FULL_BIT)
        self.row = raw & ROW_MASK

    def __repr__(self) -> str:
        return f"LocalAddr({self.describe()})"

    def describe(self) -> str:
        if self.garbage:
            return "GARBAGE"
        where = "acc" if self.is_acc else "spad"
        flags = ("+accumulate" if self.accumulate else "") + ("+full" if self.full else "")
        return f"{where}[{self.row}]{flags}"


@lru_cache(maxsize=4096)  # programs reuse a handful of operands; decoding each once matters
def operand(value: int) -> tuple[LocalAddr, int, int]:
    """Split an rs operand into (local address, cols, rows): rows<<48 | cols<<32 | addr."""
    return LocalAddr(value & 0xFFFFFFFF), bits(value, 32, 16), bits(value, 48, 16)
