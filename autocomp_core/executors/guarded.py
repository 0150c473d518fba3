"""``backend.evaluate`` as the engine calls it, on whichever machine an executor runs it.

Below every executor: the ``local`` one calls it in this process, a Ray evaluation slot on
its node; ``eval``, ``fidelity`` and the knowledge builder call it directly.
"""

from __future__ import annotations

import anyio
import structlog

from ..contract.backend import Backend, EvalContext, EvalResult, FailureKind, Problem
from ..contract.validity import refuse_impossible

log = structlog.get_logger("autocomp")


async def evaluate_guarded(
    backend: Backend, problem: Problem, code: str, ctx: EvalContext
) -> EvalResult:
    """``backend.evaluate`` as the engine calls it (the contract in ``Backend.evaluate``):
    an exception is the evaluator's own failure and becomes an ``INFRA_ERROR`` result, a
    backend that overruns its own limits by far is stopped, and a result below the
    backend's lower bound is refused (``validity.refuse_impossible``)."""
    limit = ctx.timeout_s * 3 + 60  # the backend enforces its limits; this is the last line
    try:
        with anyio.fail_after(limit):
            result = await backend.evaluate(problem, code, ctx)
        return refuse_impossible(result, backend.metric_lower_bound(problem))
    except TimeoutError:
        return EvalResult(
            correct=False,
            failure=FailureKind.TIMEOUT,
            feedback=f"evaluation exceeded {limit:.0f} s",
        )
    except Exception as exc:  # a backend bug or a missing tool must not end the run
        log.exception("backend evaluate raised", backend=backend.name)
        return EvalResult(
            correct=False,
            failure=FailureKind.INFRA_ERROR,
            feedback=f"evaluator error: {type(exc).__name__}: {exc}",
        )
