"""Schedule reuse: start a run from what won another one.

A finished run's *schedule* is its winning lineage, baseline to best: the plan of each step
and what it gained. With ``[search] reuse = ["runs/gemm-64"]`` (``--reuse RUN``) a new run
first applies each donor's plans, in order, to its own baseline: the LLM implements each
plan on the program the previous step left; a step whose program fails gets one repair, and
is skipped if that fails too. The programs it reaches join the first beam, and the search
goes on from there as usual. Plans travel across shapes of one backend's problem family; a
donor of another backend is refused unless ``search.reuse_across_backends`` is set.

Everything is journaled as for any candidate (ids ``reuse-<donor>-<step>``, origin
``reuse``); the beam it makes is saved as iteration 0's with the run's ``reuse`` meta, so a
resumed or replayed run does not apply a schedule twice.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.backend import EvalResult
from ..errors import ConfigError
from ..ledger.store import Candidate, Origin, RunStore, best_candidate

#: the origins whose plan is a plan a person could apply again (not "direct optimization")
PLANNED = (Origin.PLAN, Origin.REUSE)


@dataclass(frozen=True)
class Step:
    plan: str
    gain: float  # the parent's score over this step's: what the step won in the donor


@dataclass(frozen=True)
class Schedule:
    run_dir: str
    backend: str
    problem: str
    steps: list[Step]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def donor_schedule(run_dir: str | Path) -> Schedule:
    """The schedule of the run in ``run_dir``: its best program's lineage, as plans."""
    if not RunStore.exists(run_dir):
        raise ConfigError(f"search.reuse: no run found in {run_dir}")
    store = RunStore(run_dir, readonly=True)
    try:
        config = store.get_meta("config") or {}
        cands = store.candidates()
        by_id = {c.id: c for c in cands}
        best = best_candidate(cands, True, store.overfit())
        chain: list[Candidate] = []
        while best is not None:
            chain.append(best)
            best = by_id.get(best.parents[0]) if best.parents else None
    finally:
        store.close()
    chain.reverse()
    steps: list[Step] = []
    for parent, child in itertools.pairwise(chain):
        # a repair's parent is the failed attempt's: it is the step, with that attempt's plan
        made = by_id.get(child.id.removesuffix("-r")) if child.origin == Origin.REPAIR else child
        plan = child.plan if made is not None and made.origin in PLANNED else None
        if plan and parent.score > 0 and child.score > 0:
            steps.append(Step(plan, parent.score / child.score))
    return Schedule(str(run_dir), config.get("backend", "?"), config.get("problem", "?"), steps)


def donor_schedules(donors: list[str], backend: str, across_backends: bool) -> list[Schedule]:
    """Every donor's schedule, checked: a run, with a schedule, of this backend (unless
    ``across_backends``). Raises ConfigError naming what is wrong, before anything is spent."""
    schedules = []
    for donor in donors:
        schedule = donor_schedule(donor)
        if schedule.backend != backend and not across_backends:
            raise ConfigError(
                f"search.reuse: {donor} is a {schedule.backend} run and this is {backend}; its "
                "plans may not apply (set search.reuse_across_backends = true to try anyway)"
            )
        if not schedule.steps:
            raise ConfigError(
                f"search.reuse: {donor} has no schedule to reuse (its best program is its "
                "baseline, or it was reached without plans)"
            )
        schedules.append(schedule)
    return schedules


async def apply_schedule(search: Any, it: Any, d: int, schedule: Schedule) -> list[dict]:
    """Apply donor ``d``'s plans in order from the run's baseline, each on the program the
    step before reached (``search``: the run's Search, ``it``: iteration 0 under way); what
    each step did, journaled in the ``reuse`` meta."""
    current = search.lineage.require("root")
    done: list[dict] = []
    for k, step in enumerate(schedule.steps):
        chain = search.lineage.chain(current)
        first = search.drafts.implementations(0, False, chain, 0, f"r{d}s{k}", 0, 1, step.plan, "")
        draft = dataclasses.replace(
            first[0], id=f"reuse-{d}-{k}", origin=Origin.REUSE, phase="reuse"
        )
        c, result = await _write_and_check(search, it, draft)
        outcome = "no program" if c is None else "applied" if c.correct else "failed"
        if c is not None and result is not None and not c.correct:
            repair = search.drafts.repair(c, result, always=True)
            if repair is not None:
                repair = dataclasses.replace(repair, id=f"reuse-{d}-{k}-r", origin=Origin.REUSE)
                c, _ = await _write_and_check(search, it, repair)
                outcome = "repaired" if c is not None and c.correct else "failed"
        if c is not None and c.correct:
            current = c
        else:
            outcome = "skipped"
        done.append(
            {
                "donor": schedule.run_dir,
                "step": k,
                "plan": step.plan[:300],
                "outcome": outcome,
                "candidate": c.id if c is not None else None,
                # a failed step has no score (it was inf, which JSON cannot hold)
                "score": c.score if c is not None and c.correct else None,
            }
        )
    return done


async def _write_and_check(
    search: Any, it: Any, draft: Any
) -> tuple[Candidate | None, EvalResult | None]:
    """The candidate ``draft``'s answer made, and its evaluation (None, None: no program)."""
    c = await search.write(it, draft)
    if c is None:
        return None, None
    return c, await search.evaluate_into(c)
