"""The trusted side: replay an untrusted instruction trace, enforcing the compiler's and the
hardware's rules, computing the outputs from the inputs and costing the schedule.

The trace is data, never code: JSON lists that this package validates field by field. A trace
that is malformed, refers to tensors it never allocated, reads outside a tensor or breaks a rule
is refused with the rule's name. The outputs the harness checks are the ones computed here, from
inputs the tracing process never saw, so a trace that was edited, shortened or forged (or a
kernel that computed on the host) cannot produce them. The latency comes from the same replay.

Numerics (nki.md section 4): tensors are stored in their dtype (bf16/fp8 via ml_dtypes, so every
write rounds), every engine computes in fp32, matmuls accumulate in fp32 PSUM. Fresh SBUF/PSUM
and output HBM allocations hold NaN sentinels, so reading memory nothing wrote shows up as a
wrong answer. Several seeds run at once: every array has a leading seed axis.

The rooms: ``loop.py`` reads the events in order (allocations, loops, instructions) and hands
each instruction to its function in ``ops/`` (the table ``ops.OPS``); ``state.py`` holds the
tensors, loops, access patterns and the core an instruction acts on; ``rules.py`` the rules
several instructions share; ``numerics.py`` what the engines compute; ``pricing.py`` what an
instruction costs; ``fusions.py`` the instructions the compiler merges.
"""

from __future__ import annotations

from ..hardware import Generation
from .fusions import Fusions, compiler_fusions
from .loop import Replayer
from .state import ReplayResult, TraceRefused

__all__ = ["Fusions", "ReplayResult", "Replayer", "TraceRefused", "compiler_fusions", "replay"]


def replay(
    trace: dict, gen: Generation, input_specs, inputs=None, output_specs=None, seeds: int = 1
) -> ReplayResult:
    return Replayer(trace, gen, input_specs, inputs, output_specs, seeds).run()
