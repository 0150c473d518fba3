"""What one evaluation found (``Verdict``), and the verdicts read from how a worker ended."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autocomp_core import SandboxResult

from ..problemset import ProblemSpec
from ..statuses import CUDA_FAULT_MARKERS, INFRA_ERROR, OOM_MARKERS, STATUSES


@dataclass
class Verdict:
    """What one evaluation found. ``status`` is one of ``STATUSES``."""

    status: str
    message: str = ""
    detail: str = ""
    candidate_ms: float | None = None
    baseline_ms: float | None = None
    candidate_iqr_ms: float | None = None
    compiled_baseline_ms: float | None = None  # torch.compile(Model), when that baseline is on
    error_ratio: float | None = None
    flags: list[str] = field(default_factory=list)  # reasons to exclude from fast_p
    notes: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)  # reference, build, eval: they add up
    #: where the eval phase went: startup (job handed over until the worker began), the
    #: worker's own phases (setup, load, correctness, timing, output_write), the judge's
    #: (judge_load, judge_compare) and the rest (process exit, files)
    breakdown_s: dict[str, float] = field(default_factory=dict)
    build_cache_hit: bool | None = None
    worker_warm: bool | None = None  # the worker had its imports done when the job arrived
    sizes: dict[str, Any] = field(
        default_factory=dict
    )  # module constants overridden ({}: the file's own)
    sizes_auto: bool = False  # chosen by shrinking the problem to the CPU budget
    shapes: dict[str, Any] = field(
        default_factory=dict
    )  # input and output shapes ({}: no reference ran)

    @property
    def speedup(self) -> float | None:
        if self.candidate_ms and self.baseline_ms:
            return self.baseline_ms / self.candidate_ms
        return None

    @property
    def speedup_vs_compiled(self) -> float | None:
        if self.candidate_ms and self.compiled_baseline_ms:
            return self.compiled_baseline_ms / self.candidate_ms
        return None

    @property
    def scored(self) -> bool:
        """Counts toward fast_p: correct and not flagged."""
        return self.status == "ok" and not self.flags

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "candidate_ms": self.candidate_ms,
            "baseline_ms": self.baseline_ms,
            "speedup": self.speedup,
            "candidate_iqr_ms": self.candidate_iqr_ms,
            "compiled_baseline_ms": self.compiled_baseline_ms,
            "speedup_vs_compiled": self.speedup_vs_compiled,
            "error_ratio": self.error_ratio,
            "flags": self.flags,
            "notes": self.notes,
            "info": self.info,
            "phases_s": self.phases_s,
            "breakdown_s": self.breakdown_s,
            "build_cache_hit": self.build_cache_hit,
            "worker_warm": self.worker_warm,
            "sizes": self.sizes,
            "sizes_auto": self.sizes_auto,
            "scored": self.scored,
        }


def describe_sizes(spec: ProblemSpec, sizes: dict[str, Any]) -> str:
    """One line: the sizes a problem was shrunk to, next to the file's own."""
    if not sizes:
        return "sizes: the file's own (they fit the CPU budget)"
    shown = ", ".join(f"{k}={v} (file: {spec.constants.get(k, '?')})" for k, v in sizes.items())
    return f"sizes shrunk automatically to fit the CPU: {shown}"


def crash_verdict(result: SandboxResult, phase: str) -> Verdict:
    """A worker that died without writing its result: classify from how it ended."""
    if result.disk_exceeded:  # (killed by its sandbox for what it wrote: its doing)
        return Verdict(
            "runtime_error",
            f"the worker was killed during {phase}: {result.disk_exceeded}",
            detail=result.stderr[-3000:],
        )
    text = (result.stderr or "").lower()
    if any(m in text for m in OOM_MARKERS) or (result.signal == 9 and not result.timed_out):
        status = "oom"
    elif any(m in text for m in CUDA_FAULT_MARKERS):
        status = "cuda_fault"
    else:
        status = (
            "load_error" if phase in ("setup", "load", "startup", "compile") else "runtime_error"
        )
    how = f"signal {result.signal}" if result.signal else f"exit code {result.returncode}"
    return Verdict(
        status,
        f"the worker died during {phase} ({how}); a fresh worker is used next",
        detail=result.stderr[-3000:],
    )


def tail_errors(log: str, limit: int = 3000) -> str:
    """The lines of a build log that name an error (its tail where none does)."""
    lines = [line for line in log.splitlines() if "error" in line.lower()]
    return "\n".join(lines)[-limit:] or log[-limit:]


def median_iqr(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    if len(values) < 4:
        return statistics.median(values), 0.0
    q = statistics.quantiles(values, n=4)
    return statistics.median(values), q[2] - q[0]


#: The worker's result (``result.json``): each field the checks read, and what it must hold.
_NUMBER = (int, float)
_RESULT_FIELDS: dict[str, Callable[[Any], bool]] = {
    # (never infra_error: the engine's own failing, which is retried and held against no one)
    "status": lambda v: v in STATUSES and v != INFRA_ERROR,
    "message": lambda v: isinstance(v, str),
    "detail": lambda v: isinstance(v, str),
    "info": lambda v: isinstance(v, dict),
    "custom_code": lambda v: isinstance(v, bool),
    "weights_unmatched": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
    "input_checksums": lambda v: isinstance(v, list),
    "timing": lambda v: (
        isinstance(v, dict)
        and all(
            isinstance(series, list)
            and all(
                x is None or (isinstance(x, _NUMBER) and not isinstance(x, bool)) for x in series
            )
            for series in v.values()
        )
    ),
}


def result_malformed(outcome: Any) -> str:
    """What is wrong with a worker's result ("" where nothing is): a field of another type
    than the worker writes (a candidate rewrote it: the fifth meter red team's a14)."""
    if not isinstance(outcome, dict):
        return f"a {type(outcome).__name__}, not a map"
    if "status" not in outcome:
        return "no status"
    for key, fits in _RESULT_FIELDS.items():
        if key in outcome and not fits(outcome[key]):
            return f"its {key!r} is {str(outcome[key])[:80]!r}"
    return ""
