"""The equal-budget control: would plain sampling have found as much for the same money?

With ``[search] control = "iid"`` or ``"agent"``, once the search ends the run spends as
much again on a control, evaluated the same way and journaled in the same run:

- ``iid``: independent programs asked for from the baseline (the search's direct prompt,
  no beam, no plan), many at once;
- ``agent``: one conversation that improves its own last program, or repairs it when it
  failed (the shape of a coding-agent loop), one program at a time.

"The same money" is measured in the budget that stopped the search (``budget.usd``,
``budget.tokens``, ``budget.llm_calls`` or ``budget.evaluations``), else in tokens. The
control has a budget of its own, that amount, counted over its own spending only, so its
calls and evaluations stop where the search's did; samples are sent fewer at a time as it
nears the end, so it lands within a few percent. Its programs are candidates of iteration
``CONTROL_ITERATION`` (origin ``control``), never in a beam and never the run's best; the
summary puts the control's best beside the search's.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from ..config import BudgetConfig
from ..contract.backend import EvalResult
from ..ledger.accounting import Budget, Ledger, RunStopped
from ..ledger.store import Candidate, Origin, RunStore, best_candidate
from .answers import program_from
from .drafts import Draft, sample_of
from .held_out import HeldOut
from .journal import Evaluator, JournaledLLM
from .phase_requests import phase_request

log = structlog.get_logger("autocomp.engine")

CONTROL_ITERATION = -1
CONTROL_PHASE = "control"
#: the run's meta key holding the control's target (what the search spent), for resume
TARGET_META = "control_target"
#: rounds in a row that spent nothing (failed calls cost nothing) before the control gives up
IDLE_ROUNDS = 3
#: the budget that stopped the search -> the measure the control spends as much of
MEASURES = {
    "budget.usd": "usd",
    "budget.tokens": "tokens",
    "budget.llm_calls": "llm_calls",
    "budget.evaluations": "evaluations",
}


def spent(ledger: Ledger) -> dict[str, float]:
    return {
        "usd": ledger.cost_usd,
        "tokens": float(ledger.tokens),
        "llm_calls": float(ledger.llm_calls),
        "evaluations": float(ledger.evaluations),
    }


@dataclass
class ControlSpending:
    """What the control spent: the run's ledger less what it held when the search ended."""

    ledger: Ledger
    before: dict[str, float]

    def _less(self, measure: str) -> float:
        return spent(self.ledger)[measure] - self.before[measure]

    @property
    def cost_usd(self) -> float:
        return self._less("usd")

    @property
    def tokens(self) -> int:
        return int(self._less("tokens"))

    @property
    def llm_calls(self) -> int:
        return int(self._less("llm_calls"))

    @property
    def evaluations(self) -> int:
        return int(self._less("evaluations"))

    @property
    def wall_s(self) -> float:
        return self.ledger.wall_s

    def of(self, measure: str) -> float:
        return self._less(measure)


class Control:
    def __init__(self, search: Any, ledger: Ledger) -> None:
        self.search = search  # the finished Search (engine.search): its prompts, lineage, doors
        self.kind: str = search.s.control
        self.store: RunStore = search.store
        self.ledger = ledger
        self.samples = 0

    def target(self, stop_reason: str) -> dict[str, Any]:
        """What the control spends as much of: decided when the search ends, journaled."""
        saved = self.store.get_meta(TARGET_META)
        if saved is not None:
            return dict(saved)
        before = spent(self.ledger)
        measure = MEASURES.get(stop_reason, "tokens")
        if measure == "tokens" and before["tokens"] == 0:  # a model that reports no usage
            measure = "llm_calls"
        target = {
            "kind": self.kind,
            "measure": measure,
            "amount": before[measure],
            "before": before,
        }
        self.store.set_meta(TARGET_META, target)
        return target

    async def run(self, stop_reason: str) -> None:
        target = self.target(stop_reason)
        spending = ControlSpending(self.ledger, target["before"])
        amount = target["amount"]
        limit = (
            {"usd": amount}
            if target["measure"] == "usd"
            else {target["measure"]: math.ceil(amount)}
        )
        budget = Budget(BudgetConfig(**limit), spending)
        self.llm: JournaledLLM = copy.copy(self.search.llm)
        self.llm.budget = budget
        self.evaluator: Evaluator = copy.copy(self.search.evaluator)
        self.evaluator.budget = budget
        self.samples = len(self.store.candidates(CONTROL_ITERATION))
        log.info("control", kind=self.kind, measure=target["measure"], amount=target["amount"])
        idle = 0  # rounds in a row that spent nothing (every call failed, unbilled)
        try:
            while spending.of(target["measure"]) < amount and idle < IDLE_ROUNDS:
                before = spending.of(target["measure"])
                if self.kind == "agent":
                    await self.step(self.last())
                else:
                    await self.batch(self.width(before, amount))
                idle = idle + 1 if spending.of(target["measure"]) == before else 0
        except RunStopped:  # its budget (the search's spend) is reached
            pass
        if idle >= IDLE_ROUNDS:
            log.warning(
                "control stopped: its calls spend nothing (every one failed)",
                spent=spending.of(target["measure"]),
                of=amount,
            )
        # the control's best passes the same held-out check as the search's
        checker = HeldOut(self.evaluator, self.store, self.search.s.held_out)
        await checker.settle_best(
            lambda overfit: best_candidate(self.store.candidates(CONTROL_ITERATION), False, overfit)
        )

    def width(self, used: float, amount: float) -> int:
        """How many samples to send at once: the search's width, fewer near the end."""
        full = self.search.s.plans_per_candidate * self.search.s.codes_per_plan
        if self.samples == 0 or used <= 0:
            return 1
        per_sample = used / self.samples
        return max(1, min(full, math.floor((amount - used) / per_sample)))

    async def batch(self, width: int) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(width):
                group.start_soon(self.step, None)

    def last(self) -> Candidate | None:
        mine = self.store.candidates(CONTROL_ITERATION)
        return max(mine, key=lambda c: int(c.id.split("-")[1])) if mine else None

    async def step(self, last: Candidate | None) -> None:
        """One control program: from the baseline (iid), or the agent's next move from its
        own last program (improve it, or repair it when it failed)."""
        k = self.samples
        self.samples += 1
        search = self.search
        root = search.lineage.require("root")
        chain = [root] if last is None else search.lineage.chain(last)
        translate = search.translation.iterations > 0 and (last is None or not last.correct)
        draft = search.drafts.direct(CONTROL_ITERATION, translate, chain, 0, k, None)
        if last is not None and not last.correct and last.code and last.eval_key:
            result = EvalResult.from_dict(self.store.evaluation(last.eval_key) or {})
            last.errors = "\n".join(x for x in (result.feedback, result.stderr) if x)
            draft = search.drafts.repair(last, result, always=True) or draft
        draft = dataclasses.replace(
            draft,
            id=f"ctl-{k}",
            origin=Origin.CONTROL,
            phase=CONTROL_PHASE,
            parents=[chain[-1].id] if last is not None else [root.id],
        )
        await self.write_and_evaluate(draft)

    async def write_and_evaluate(self, draft: Draft) -> None:
        search = self.search
        request = phase_request(
            search.cfg.llm,
            draft.model,
            draft.prompt,
            draft.phase,
            sample_of(draft.id),
            edits=draft.edits,
        )
        resp = await self.llm.complete(request)
        if not resp.ok:
            return
        code, why = program_from(
            resp.text, draft.base, draft.edits, search.backend.language, search.backend.code_anchor
        )
        c = draft.candidate(CONTROL_ITERATION, code)
        search.lineage.save(c)
        if code is None:
            self.store.event("candidate_rejected", candidate=c.id, reason=why)
            return
        key, result = await self.evaluator.evaluate(code)
        c.eval_key, c.score, c.feedback = key, result.score, result.feedback
        c.errors = "\n".join(x for x in (result.feedback, result.stderr, result.stdout) if x)
        search.lineage.save(c)


def control_summary(
    store: RunStore, ledger_dict: dict[str, Any], main_best: Candidate | None, initial: float
) -> dict[str, Any] | None:
    """The control beside the search: what each spent and found (``summary.json``)."""
    target = store.get_meta(TARGET_META)
    if target is None:
        return None
    mine = store.candidates(CONTROL_ITERATION)
    best = best_candidate(mine, False, store.overfit())
    measure = target["measure"]
    totals = {
        "usd": ledger_dict["cost_usd"],
        "tokens": ledger_dict["tokens"],
        "llm_calls": ledger_dict["llm_calls"],
        "evaluations": ledger_dict["evaluations"],
    }

    def speedup(c: Candidate | None) -> float | None:
        return initial / c.score if c and c.score > 0 and math.isfinite(initial) else None

    beam, control = speedup(main_best), speedup(best)
    return {
        "kind": target["kind"],
        "measure": measure,
        "search_spent": target["amount"],
        "control_spent": totals[measure] - target["before"][measure],
        "samples": len(mine),
        "correct": sum(c.correct for c in mine),
        "best_candidate": best.id if best else None,
        "best_score": best.score if best else None,
        "search_speedup": beam,
        "control_speedup": control,
        "search_over_control": beam / control if beam and control else None,
    }
