"""The problem-quality gate: a problem is only accepted if the harness can judge it.

Checks, all in the reference worker: the reference repeats itself (same seed, fresh weights
and inputs), a second call of one model on the same inputs gives the same output and changes
none of the tensors or numbers it keeps as plain attributes (state no ``state_dict`` resets:
L3/33's ``self.hidden``), its fp32 output is within tolerance of the float64 one, and every trivial
answer (zeros, the mean as a constant, ones, any input returned unchanged) is rejected.
A problem that cannot run here at all is refused with the reason (it cannot shrink to the
CPU budget, does not fit the GPU, does not import, or its reference is too slow).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .harness import Harness, ProblemRefused
from .problemset import ProblemSpec

#: Why a problem is refused, as the report groups them.
CATEGORIES = (
    "passed",
    "degenerate",
    "nondeterministic",
    "stateful",
    "tolerance",
    "cannot_shrink",
    "too_big",
    "reference_too_slow",
    "import_error",
    "reference_error",
)

#: Categories that say the harness cannot tell a right program from a wrong one on the
#: problem (the others say it cannot run here at all, which an evaluation says itself).
CANNOT_JUDGE = ("degenerate", "nondeterministic", "stateful", "tolerance")


@dataclass
class GateReport:
    problem: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    category: str = "passed"  # the first reason's kind (see CATEGORIES)
    seconds: float = 0.0

    @property
    def judgeable(self) -> bool:
        """Whether a verdict on a program for this problem means anything (see CANNOT_JUDGE)."""
        return self.passed or self.category not in CANNOT_JUDGE

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "passed": self.passed,
            "category": self.category,
            "reasons": self.reasons,
            "seconds": self.seconds,
            "details": self.details,
        }


async def check_problem(harness: Harness, spec: ProblemSpec, seed: int = 0) -> GateReport:
    started = time.perf_counter()
    report = await _check(harness, spec, seed)
    report.seconds = time.perf_counter() - started
    return report


async def _check(harness: Harness, spec: ProblemSpec, seed: int) -> GateReport:
    try:
        _, meta = await harness.reference(spec, seed, gate=True)
    except ProblemRefused as exc:
        return GateReport(spec.id, False, [str(exc)], category=exc.reason)
    except Exception as exc:  # the first line says what; the traceback stays in the details
        text = str(exc).strip() or type(exc).__name__
        return GateReport(
            spec.id,
            False,
            [f"the reference does not run: {text.splitlines()[0]}"],
            {"error": text},
            category="reference_error",
        )
    gate = meta.get("gate", {})
    found = [*_repeats_itself(gate), *_judges_answers(gate, meta)]
    details = {
        "gate": gate,
        "output": meta.get("output"),
        "reference_error_ratio": meta.get("reference_error_ratio"),
        "memory_bytes_full": gate.get("memory_bytes_full"),
        "sizes": meta.get("sizes") or {},
        "sizes_auto": bool(meta.get("sizes_auto")),
        "measured": meta.get("measured"),
        "full_size": meta.get("full_size"),
        "reference_s": meta.get("reference_s"),
    }
    return GateReport(
        spec.id,
        not found,
        [text for _, text in found],
        details,
        category=found[0][0] if found else "passed",
    )


def _repeats_itself(gate: dict[str, Any]) -> list[tuple[str, str]]:
    """(category, reason) for a reference whose output depends on an earlier call or on chance."""
    found: list[tuple[str, str]] = []
    # Fresh models agree but a model called before does not: the output depends on what an
    # earlier call left behind (not on chance).
    carries = gate.get("second_call_gap", 0.0) > 0.05 and gate.get("first_trial_gap", 0.0) <= 0.05
    if carries:
        found.append(
            (
                "stateful",
                f"a second call on the same inputs differs from the first by "
                f"{gate['second_call_gap']:.3g}x the tolerance: the model carries state across calls",
            )
        )
    if gate.get("stateful_attributes"):
        names = ", ".join(f"self.{name}" for name in gate["stateful_attributes"][:5])
        found.append(
            (
                "stateful",
                f"forward changes {names}, kept as plain attributes (not parameters or "
                "buffers, so no state_dict resets them): the model carries state across calls",
            )
        )
    if not gate.get("deterministic") and not carries:
        found.append(
            (
                "nondeterministic",
                f"the reference is not deterministic (two runs with one seed differ by "
                f"{gate.get('determinism_gap', float('nan')):.3g}x the tolerance)",
            )
        )
    return found


def _judges_answers(gate: dict[str, Any], meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(category, reason) for a problem on which a wrong answer could pass: a trivial answer
    does, the output is noise, or the tolerance is tighter than float32 itself."""
    found: list[tuple[str, str]] = []
    passing = sorted(
        name for name, rejected in gate.get("probes_rejected", {}).items() if not rejected
    )
    if passing:
        found.append(("degenerate", f"trivial answers pass: {', '.join(passing)}"))
    if gate.get("noise_to_signal", 0.0) > 1.0:
        found.append(
            (
                "degenerate",
                f"the output is rounding noise around zero: float32 and float64 runs differ by "
                f"{gate['noise_to_signal']:.3g}x the output's RMS",
            )
        )
    elif not gate.get("tolerance_sane"):
        found.append(
            (
                "tolerance",
                f"the fp32 reference is {meta.get('reference_error_ratio', 0):.3g}x the tolerance "
                "away from float64: the tolerance is too tight for this problem",
            )
        )
    return found


def sizes_text(report: GateReport) -> str:
    sizes = report.details.get("sizes") or {}
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the file's own"
    return f"sizes (chosen automatically): {shown}"


def totals(reports: list[GateReport]) -> dict[str, int]:
    counts = {category: 0 for category in CATEGORIES}
    for r in reports:
        counts[r.category] = counts.get(r.category, 0) + 1
    return {k: v for k, v in counts.items() if v}


def totals_line(reports: list[GateReport], wall_s: float) -> str:
    counts = totals(reports)
    refused = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "passed") or "none"
    return (
        f"{counts.get('passed', 0)} of {len(reports)} problems pass; refused: {refused}; "
        f"wall time {wall_s:.0f} s"
    )


def markdown_report(
    reports: list[GateReport],
    names: dict[str, str],
    wall_s: float,
    jobs: int,
    device: str,
    size: str,
) -> str:
    """Totals per reason, then one row per problem (reason, time, the sizes that ran)."""
    lines = [
        f"# Quality gate: {len(reports)} problems (device {device}, size tier {size})",
        "",
        f"Wall time {wall_s:.0f} s with {jobs} problem(s) at once; sum of per-problem times "
        f"{sum(r.seconds for r in reports):.0f} s.",
        "",
        "| result | problems |",
        "|---|---:|",
    ]
    lines += [f"| {category} | {count} |" for category, count in totals(reports).items()]
    lines += [
        "",
        "| problem | name | result | seconds | sizes | reason |",
        "|---|---|---|---:|---|---|",
    ]
    for r in reports:
        sizes = ", ".join(f"{k}={v}" for k, v in (r.details.get("sizes") or {}).items())
        reason = "; ".join(r.reasons).replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {r.problem} | {names.get(r.problem, '')} | {r.category} | {r.seconds:.1f} | {sizes} | "
            f"{reason} |"
        )
    return "\n".join(lines) + "\n"
