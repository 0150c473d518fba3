"""The machine both models are: `GemminiBase`, the commands' entry with error translation,
the commands that are not primitives (the LOOP_* state machines in loops.py) and statistics.

The Python model (`functional.Gemmini`) and the compiled one (`native_model.NativeGemmini`)
both derive from `GemminiBase`. Like base.py this module imports no numpy: loops.py (which
does) is imported when the first LOOP_* command runs, so a simulation on the compiled model
that issues none never pays for numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import isa
from .base import BadAddress, Counters, GemminiError, LoadConfig

if TYPE_CHECKING:
    from ..config import GemminiConfig
    from .base import ArrayConfig
    from .timing import TimingModel


def _unsupported(what: str, exc: Exception) -> str:
    return (
        f"{what} could not be executed with these operands ({type(exc).__name__}: "
        f"{str(exc)[:300]}): check its sizes and strides against the gemmini.h documentation"
    )


class GemminiBase:
    """The commands' error translation, the LOOP_* commands and statistics. A subclass
    provides `_execute(funct, rs1, rs2)`, which runs the primitive commands and hands every
    other funct to `_execute_other`, `_fence()`, and `rows_used()`."""

    cfg: GemminiConfig | ArrayConfig
    timing: TimingModel
    counters: Counters
    loop_ws_regs: dict[int, tuple[int, int]]
    loop_conv_regs: dict[int, tuple[int, int]]
    ld: list[LoadConfig]

    def execute(self, funct: int, rs1: int, rs2: int) -> None:
        try:
            moved = self._dma_row_bytes(funct, rs1, rs2)
            self._execute(funct, rs1, rs2)
            if moved is not None:
                self.counters.count_dma(*moved)
        except BadAddress as exc:
            raise GemminiError(str(exc)) from None
        except GemminiError:
            raise
        except Exception as exc:  # noqa: BLE001
            # Any failure executing a command the program issued is the program's (operands the
            # model has no check for yet): a crash naming the command, never an infra error.
            raise GemminiError(_unsupported(isa.NAMES.get(funct, f"funct {funct}"), exc)) from None

    def fence(self) -> None:
        try:
            self._fence()
        except BadAddress as exc:
            raise GemminiError(str(exc)) from None
        except GemminiError:
            raise
        except Exception as exc:  # noqa: BLE001 -- as in execute: the queued commands' failure
            raise GemminiError(_unsupported("the commands before a fence", exc)) from None

    def _execute(self, funct: int, rs1: int, rs2: int) -> None:
        raise NotImplementedError

    def _dma_row_bytes(self, funct: int, rs1: int, rs2: int) -> tuple[int, int] | None:
        """(bytes per row, rows) a primitive mvin or mvout moves through the DMA, or None: other
        commands, a zero fill (an mvin from address 0 reads nothing) and empty moves."""
        if funct not in (isa.MVIN, isa.MVIN2, isa.MVIN3, isa.MVOUT):
            return None
        addr, cols, rows = isa.operand(rs2)
        if addr.garbage or rows == 0 or cols == 0 or (funct != isa.MVOUT and rs1 == 0):
            return None
        elem = 1 if self.cfg.dtype == "int8" else 4
        if funct == isa.MVOUT:
            wide = addr.is_acc and addr.full  # the accumulator's own 4-byte values
        else:
            state = {isa.MVIN: 0, isa.MVIN2: 1, isa.MVIN3: 2}[funct]
            wide = addr.is_acc and not self.ld[state].shrunk
        return cols * (4 if wide else elem), rows

    def _fence(self) -> None:
        raise NotImplementedError

    def _execute_other(self, funct: int, rs1: int, rs2: int) -> None:
        if isa.LOOP_WS_CONFIG_BOUNDS <= funct <= isa.LOOP_WS_CONFIG_STRIDES_DC:
            self._loop_config(self.loop_ws_regs, funct, rs1, rs2)
        elif isa.LOOP_CONV_WS_CONFIG_1 <= funct <= isa.LOOP_CONV_WS_CONFIG_6:
            self._loop_config(self.loop_conv_regs, funct, rs1, rs2)
        elif funct == isa.LOOP_WS:
            from . import loops  # here, not at the top: loops.py imports numpy

            self.counters.count("loop_ws")
            loops.loop_ws(self, rs1, rs2, self.timing.issue("load"))
        elif funct == isa.LOOP_CONV_WS:
            from . import loops  # as above

            self.counters.count("loop_conv_ws")
            loops.loop_conv_ws(self, rs1, rs2, self.timing.issue("load"))
        else:
            raise GemminiError(f"unknown Gemmini command funct={funct}")

    def _loop_config(
        self, regs: dict[int, tuple[int, int]], funct: int, rs1: int, rs2: int
    ) -> None:
        self.timing.issue("load")
        regs[funct] = (rs1, rs2)

    def in_flight(self) -> bool:
        return self.timing.last_end > self.timing.cpu_now() + 1e-9

    def rows_used(self) -> tuple[int, int]:
        """Scratchpad and accumulator rows written so far."""
        raise NotImplementedError

    def utilization(self) -> dict[str, float]:
        spad, acc = self.rows_used()
        return {
            "spad_rows_used": float(spad),
            "spad_rows": float(self.cfg.spad_rows),
            "acc_rows_used": float(acc),
            "acc_rows": float(self.cfg.acc_rows),
        }
