"""The beam a run starts from (iteration 0): the problem's initial program, or with
``search.continue_from`` another run's final beam, measured here either way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..contract.backend import EvalResult, Problem
from ..errors import RunError
from ..ledger.store import Candidate, Origin
from .lineage import Lineage

#: evaluates a candidate and records the verdict in it
Evaluate = Callable[[Candidate], Awaitable[EvalResult]]


async def initial_beam(
    problem: Problem, continue_from: str | None, lineage: Lineage, evaluate: Evaluate
) -> list[Candidate]:
    if continue_from:
        return await continued_beam(continue_from, lineage, evaluate)
    root = Candidate(
        id="root", iteration=0, parents=[], origin=Origin.ROOT, code=problem.baseline_code
    )
    result = await evaluate(root)
    if not root.correct:
        # the verdict's first lines say what failed; the stderr tail says why
        summary = " ".join((result.feedback or result.stderr or "").strip().splitlines()[:2])
        tail = (result.stderr or "").strip()[-1500:]
        raise RunError(
            f"the initial program of {problem.id} is incorrect "
            f"({result.failure.value if result.failure else 'failed'})"
            + (f": {summary[:300]}" if summary else "")
            + (f"\nits stderr ends:\n{tail}" if tail else "")
        )
    return [root]


async def continued_beam(run_dir: str, lineage: Lineage, evaluate: Evaluate) -> list[Candidate]:
    """Another run's final beam, measured again here (the hardware or the backend may
    differ); only its programs correct here."""
    beam = []
    for c in lineage.import_beam(run_dir):
        await evaluate(c)
        if c.correct:
            beam.append(c)
    if not beam:
        raise RunError(f"search.continue_from: no program of {run_dir}'s beam is correct here")
    return beam
