"""Suite results: KernelBench-compatible ``fast_p`` next to our stricter verdicts.

``fast_p = (1/N) * #{problems: correct and speedup > p}`` over all N problems (missing or
failed ones count as 0), as KernelBench defines it. Our ``fast_p`` differs in two ways,
both reported: the baseline is timed live, interleaved with the candidate, and a candidate
that is correct but flagged (no custom kernel, implausible speed) does not count.
"""

from __future__ import annotations

import math
from typing import Any

from .harness import Verdict

P_VALUES = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


def fast_p(
    verdicts: dict[str, Verdict | None], p: float, strict: bool = True, against: str = "eager"
) -> float:
    """Fraction of problems solved correctly with speedup above ``p`` over the eager (or the
    compiled) baseline; strict: flagged candidates excluded."""
    if not verdicts:
        return 0.0
    hits = 0
    for v in verdicts.values():
        if v is None or v.status != "ok" or (strict and not v.scored):
            continue
        speedup = v.speedup if against == "eager" else v.speedup_vs_compiled
        if p == 0.0 or (speedup is not None and speedup > p):
            hits += 1
    return hits / len(verdicts)


def summary(verdicts: dict[str, Verdict | None]) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for v in verdicts.values():
        key = v.status if v is not None else "missing"
        statuses[key] = statuses.get(key, 0) + 1
    speedups = [v.speedup for v in verdicts.values() if v is not None and v.scored and v.speedup]
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
    return {
        "problems": len(verdicts),
        "statuses": statuses,
        "fast_p": {str(p): fast_p(verdicts, p, strict=True) for p in P_VALUES},
        "fast_p_kernelbench_compatible": {
            str(p): fast_p(verdicts, p, strict=False) for p in P_VALUES
        },
        "geomean_speedup_scored": geomean,
        # against torch.compile(Model), where that baseline was timed (compile_baseline = true)
        "fast_p_vs_compiled": {
            str(p): fast_p(verdicts, p, strict=True, against="compiled") for p in P_VALUES
        }
        if any(v is not None and v.compiled_baseline_ms for v in verdicts.values())
        else None,
        "per_problem": {k: (v.to_dict() if v is not None else None) for k, v in verdicts.items()},
    }


def format_table(verdicts: dict[str, Verdict | None]) -> str:
    lines = [f"{'problem':40} {'status':16} {'speedup':>8}  flags"]
    for name, v in verdicts.items():
        if v is None:
            lines.append(f"{name:40} {'missing':16} {'':>8}")
            continue
        speed = f"{v.speedup:.2f}x" if v.speedup else ""
        lines.append(f"{name:40} {v.status:16} {speed:>8}  {','.join(v.flags)}")
    strict = "  ".join(f"fast_{p:g}={fast_p(verdicts, p):.2f}" for p in P_VALUES)
    loose = "  ".join(f"fast_{p:g}={fast_p(verdicts, p, strict=False):.2f}" for p in P_VALUES)
    return "\n".join(
        lines + [f"ours (flags excluded): {strict}", f"KernelBench-compatible: {loose}"]
    )
