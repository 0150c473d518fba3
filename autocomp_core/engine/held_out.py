"""The held-out check: a search's best programs, evaluated where the search never looked.

The search ranks programs on one set of inputs (and shapes); a program can be right there and
wrong elsewhere, and a search that optimizes against a check will find such programs. So the
best of each iteration, and the run's reported best, are evaluated once more on inputs drawn
from other seeds, and on other shapes where the backend offers them
(``Backend.held_out_problem``). A program that fails is labelled ``overfit``: it leaves the
beam, is never reported as the best, and the next best is checked in its place. The cost is
about one evaluation per iteration, not per candidate.

Verdicts are journaled as ``held_out`` events (``RunStore.held_out_verdicts``), so a resumed or replayed run knows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from ..contract.backend import EvalResult, FailureKind
from ..ledger.accounting import RunStopped
from ..ledger.store import HELD_OUT, Candidate, RunStore
from .journal import Evaluator

log = structlog.get_logger("autocomp.engine")


class HeldOut:
    def __init__(self, evaluator: Evaluator, store: RunStore, enabled: bool) -> None:
        self.evaluator = evaluator
        self.store = store
        self.enabled = enabled
        self.verdicts = store.held_out_verdicts()

    async def passes(self, c: Candidate) -> bool | None:
        """Whether ``c`` is right on the held-out check; None when the check could not run
        (the machine failed, not the program): it is neither trusted nor blamed then."""
        if c.id in self.verdicts:
            return bool(self.verdicts[c.id]["passed"])
        try:
            key, result = await self.evaluator.evaluate(c.code or "", held_out=True)
        except RunStopped:  # a budget was reached: the check is not made, nor needed to stop
            return None
        if result.failure == FailureKind.INFRA_ERROR:
            return None
        reason = "" if result.correct else held_out_reason(result)
        verdict: dict[str, Any] = {
            "candidate": c.id,
            "passed": result.correct,
            "score": result.metric if result.correct else None,
            "search_score": c.score,
            "key": key,
            "reason": reason,
        }
        self.store.event(HELD_OUT, **verdict)
        self.verdicts[c.id] = verdict
        if not result.correct:
            log.warning("overfit", candidate=c.id, reason=reason[:200])
        return result.correct

    async def screen(self, beam: list[Candidate]) -> list[Candidate]:
        """The beam without its overfit programs, checked best first until the best passes."""
        if not self.enabled:
            return beam
        kept = list(beam)
        for c in sorted(beam, key=lambda c: c.score):
            if not c.correct or c.origin == "root":  # the baseline is the reference's twin
                break
            verdict = await self.passes(c)
            if verdict is False and len(kept) > 1:
                kept.remove(c)
                continue
            break
        return kept

    async def settle_best(self, best: Callable[[set[str]], Candidate | None]) -> None:
        """Before the run reports: check the program ``best`` picks (given the candidates
        found overfit so far) until one passes, or none is left."""
        if not self.enabled:
            return
        while True:
            chosen = best(self.store.overfit())
            if chosen is None or chosen.origin == "root" or await self.passes(chosen) is not False:
                return


def held_out_reason(result: EvalResult) -> str:
    """Why a program failed the held-out check, in at most 500 characters."""
    kind = result.failure.value if result.failure else "failed"
    return f"{kind}: {result.feedback or result.status}".strip()[:500]
