"""Audit labels: what a reviewer may conclude about each candidate, in one word.

- ``clean``: correct, and no check warned;
- ``flagged``: correct, but a check warned without refusing (``EvalResult.verification
  ["flags"]``: e.g. no custom kernel, a problem the harness cannot judge well);
- ``refused``: a check refused it (the rule: a validity rule, a wrong answer, a crash);
- ``overfit``: right in the search, wrong on the held-out check (``engine.held_out``).

A candidate still being evaluated (or whose evaluation the machine lost) has no label.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .store import Candidate

CLEAN, FLAGGED, REFUSED, OVERFIT = "clean", "flagged", "refused", "overfit"
LABELS = (CLEAN, FLAGGED, REFUSED, OVERFIT)


def audit_label(
    c: Candidate,
    result: dict[str, Any] | None,
    overfit: Collection[str] = (),
    rejected: str | None = None,
) -> tuple[str | None, str]:
    """``(label, why)`` for candidate ``c`` given its evaluation ``result`` (as journaled),
    the ids found ``overfit`` and the engine's reason when it ``rejected`` the candidate
    before any evaluation. ``label`` is None while the candidate is being evaluated."""
    if c.id in overfit:
        return OVERFIT, "failed the held-out check"
    if c.code is None or rejected is not None:
        return REFUSED, rejected or "no program in the answer"
    if result is None or result.get("failure") == "infra_error":
        return None, ""  # not evaluated yet, or the machine failed: nothing is concluded
    if not c.correct:
        rule = result.get("status") or result.get("failure") or "failed"
        return REFUSED, str(rule)
    flags = (result.get("verification") or {}).get("flags") or []
    if flags:
        return FLAGGED, ", ".join(str(f) for f in flags)
    return CLEAN, ""
