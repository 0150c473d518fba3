"""What exists on which NeuronCore: the instructions and ALU operations of the newer cores,
refused on older targets by the trusted side (the trace names the instruction; the candidate
side's early refusal is not trusted)."""

from __future__ import annotations

import numpy as np

from ... import hardware as hw
from ..numerics import ALU
from ..state import Core, fail


def require(core: Core, name: str, what: str) -> None:
    """Refuse ``name`` (an instruction, ALU operation or feature of ``hardware.FIRST_VERSION``)
    where the target core lacks it; ``what``: how the kernel called it."""
    message = core.gen.refusal(name, what)
    if message:
        fail(message, hw.UNSUPPORTED, core.line)


def _abs_max(a, b):
    """The input with the larger magnitude, keeping its sign; ``b`` on a tie (nl.abs_max)."""
    return np.where(np.abs(a) > np.abs(b), a, b)


def _abs_min(a, b):
    return np.where(np.abs(a) < np.abs(b), a, b)


#: ALU operations of NeuronCore-v4 (NKI 0.4), and ``bypass`` (activate2's "no operation")
NC4_ALU = {"abs_max": _abs_max, "abs_min": _abs_min}
BYPASS = "bypass"


def alu(core: Core, name) -> object:
    """The function of ALU operation ``name``, refused where the target lacks it."""
    if name in NC4_ALU:
        require(core, name, f"the ALU operation nl.{name}")
        return NC4_ALU[name]
    if not isinstance(name, str) or name not in ALU:
        raise ValueError("op")
    return ALU[name]
