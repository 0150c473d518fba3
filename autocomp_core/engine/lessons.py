"""The playbook in a run: what a finished run writes back, and the "what worked on similar
problems / what failed" section a new run's planner reads (``ledger.playbook``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract.backend import Problem
from ..ledger.playbook import Entry, Playbook, features
from ..ledger.store import Origin, RunStore
from .reuse import donor_schedule

#: a failed plan's reason, at most this long
REASON_CHARS = 160


def run_entry(store: RunStore, backend: str, problem: Problem, run_dir: Path) -> Entry:
    """What this run learned: its winning schedule and its failed plans (no program text)."""
    family, shapes, dtypes = features(problem.id, problem.metadata)
    schedule = donor_schedule(run_dir)
    failures = []
    seen: set[str] = set()
    for c in store.candidates():
        if c.correct or c.origin != Origin.PLAN or not c.plan or c.plan in seen:
            continue
        seen.add(c.plan)
        result = store.evaluation(c.eval_key) if c.eval_key else None
        kind = (result or {}).get("failure") or "no program"
        first = ((result or {}).get("feedback") or "").strip().splitlines()
        failures.append(
            {
                "plan": c.plan[:300],
                "kind": kind,
                "reason": (first[0] if first else "")[:REASON_CHARS],
            }
        )
    cands = store.candidates()
    root = next((c for c in cands if c.origin == Origin.ROOT), None)
    best = min((c.score for c in cands if c.correct), default=None)
    speedup = root.score / best if root and best and root.correct and best > 0 else None
    return Entry(
        backend=backend,
        family=family,
        problem=problem.id,
        shapes=shapes,
        dtypes=dtypes,
        run=f"{run_dir.parent.name}/{run_dir.name}",  # a label for a person, not a path
        speedup=speedup,
        schedule=[{"plan": s.plan[:300], "gain": round(s.gain, 3)} for s in schedule.steps],
        failures=failures[:10],
    )


def lessons(entries: list[Entry], max_chars: int) -> str:
    """The planner's section: per similar problem, the steps that won and the plans that
    failed, cut at ``max_chars`` (it is counted in the prompt like any knowledge)."""
    if not entries:
        return ""
    lines = ["## What worked on similar problems, and what failed (from earlier runs)"]
    for e in entries:
        gain = f", {e.speedup:.2f}x in all" if e.speedup else ""
        lines.append(f"- {e.problem} ({e.backend}, shapes {e.shapes or '?'}{gain}):")
        for step in e.schedule:
            lines.append(f"  - worked ({step['gain']:.2f}x): {step['plan']}")
        for fail in e.failures[:3]:
            lines.append(f"  - failed ({fail['kind']}): {fail['plan']}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 4].rstrip() + " ..."


def retrieve(path: Path, backend: str, problem: Problem, k: int, max_chars: int) -> dict[str, Any]:
    """The section for this run and which entries it came from (journaled as the run's
    ``playbook`` meta, so a resumed or replayed run shows the same)."""
    family, shapes, _ = features(problem.id, problem.metadata)
    book = Playbook(path)
    try:
        found = book.nearest(backend, family, shapes, k)
    finally:
        book.close()
    return {"entries": [e.id for e in found], "text": lessons(found, max_chars)}
