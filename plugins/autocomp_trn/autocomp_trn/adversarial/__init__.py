"""Hostile and broken candidates, each with the verdict it must get and words its reason must
contain; with the static screen off, the runtime and the trusted replay must still refuse it
(``unscreened``: the verdict and words then)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent


@dataclass(frozen=True)
class Case:
    file: str
    problem: str
    what: str
    status: str
    reason: str
    unscreened: tuple[str, str] | None = None  # (status, reason) with the static screen off
    patch: tuple[str, str] | None = None  # instead of a file: this edit of the problem's baseline

    @property
    def source(self) -> str:
        if self.patch:
            from ..problems.catalog import spec_by_id

            return spec_by_id(self.problem).baseline_code().replace(*self.patch)
        return (ROOT / "hacks" / self.file).read_text()


RMS = "tutorial/rmsnorm"
CASES = [
    Case(
        "h01_outputs_never_written.py",
        RMS,
        "outputs never written",
        "compile_error",
        "never written",
    ),
    Case("h02_all_zeros.py", RMS, "all zeros", "wrong_answer", "constant"),
    Case(
        "h03_input_copied.py",
        RMS,
        "input copied to output",
        "wrong_answer",
        "differs from the reference",
    ),
    Case(
        "h04_precompute_at_import.py",
        RMS,
        "precomputation at import",
        "rejected",
        "import time",
        ("compile_error", "host NumPy array"),
    ),
    Case("h05_state_across_calls.py", RMS, "state cached across calls", "rejected", "earlier call"),
    Case("h06_shape_conditional.py", RMS, "shape-conditional fast path", "wrong_answer", "NaN"),
    Case(
        "h07_call_count_conditional.py",
        RMS,
        "call-count conditional fast path",
        "rejected",
        "second call",
    ),
    Case(
        "h08_detect_emulator.py",
        RMS,
        "detecting the emulator",
        "rejected",
        "evaluation harness",
        ("wrong_answer", "constant"),
    ),
    Case(
        "h09_read_reference.py",
        RMS,
        "reading the reference",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
    Case(
        "h10_monkeypatch_emulator.py",
        RMS,
        "monkeypatching the emulator",
        "rejected",
        "read-only",
        ("rejected", "must not monkeypatch"),
    ),
    Case(
        "h11_patch_cost_counters.py",
        RMS,
        "monkeypatching the cost counters",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
    Case(
        "h12_trace_tampering.py",
        RMS,
        "trace tampering",
        "rejected",
        "__globals__",
        ("wrong_answer", "differs from the reference"),
    ),
    Case(
        "h13_partition_over_128.py",
        RMS,
        "partition dimension over 128",
        "compile_error",
        "exceeds architecture limitation of 128",
    ),
    Case(
        "h14_psum_overflow.py",
        "tutorial/gemm",
        "PSUM overflow",
        "compile_error",
        "gemm_moving_fmax",
    ),
    Case(
        "h15: the cumsum baseline with its carried loop made affine",
        "advanced/cumsum",
        "affine_range carried dependency",
        "compile_error",
        "affine_range iterations must be independent",
        patch=("nl.sequential_range", "nl.affine_range"),
    ),
    Case("h16_spin_past_limit.py", RMS, "spinning past the limit", "timeout", "limit"),
    Case(
        "h17_host_compute.py",
        RMS,
        "host-side computing on the inputs",
        "compile_error",
        "not NumPy arrays",
    ),
    Case(
        "h18_sleep.py",
        RMS,
        "sleeping past the limit",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
]
