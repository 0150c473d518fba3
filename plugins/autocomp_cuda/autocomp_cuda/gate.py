"""The problem-quality gate: a problem is only accepted if the harness can judge it.

Checks, all in the reference worker: the reference repeats itself (same seed, fresh weights
and inputs), its fp32 output is within tolerance of the float64 one, and every trivial
answer (zeros, the mean as a constant, ones, any input returned unchanged) is rejected.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .harness import Harness
from .problemset import ProblemSpec


@dataclass
class GateReport:
    problem: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"problem": self.problem, "passed": self.passed, "reasons": self.reasons, "details": self.details}


async def check_problem(harness: Harness, spec: ProblemSpec, seed: int = 0) -> GateReport:
    try:
        _, meta = await harness.reference(spec, seed, gate=True)
    except Exception as exc:
        return GateReport(spec.id, False, [f"the reference does not run: {exc}"])
    gate = meta.get("gate", {})
    reasons = []
    if not gate.get("deterministic"):
        reasons.append(f"the reference is not deterministic (two runs with one seed differ by "
                       f"{gate.get('determinism_gap', float('nan')):.3g}x the tolerance)")
    if not gate.get("tolerance_sane"):
        reasons.append(f"the fp32 reference is {meta.get('reference_error_ratio', 0):.3g}x the tolerance away from "
                       "float64: the tolerance is too tight for this problem")
    passing = sorted(name for name, rejected in gate.get("probes_rejected", {}).items() if not rejected)
    if passing:
        reasons.append(f"trivial answers pass: {', '.join(passing)}")
    details = {"gate": gate, "output": meta.get("output"), "reference_error_ratio": meta.get("reference_error_ratio"),
               "memory_bytes_full": gate.get("memory_bytes_full")}
    return GateReport(spec.id, not reasons, reasons, details)
