"""Rules that keep an evaluation honest whatever the backend, as pure functions.

The engine applies them where an evaluation result enters the search (``executors.
guarded.evaluate_guarded``), so every backend, the ``eval`` command and the knowledge builder see
the same verdicts. Backends use ``evaluation_seeds`` to draw the inputs of one evaluation.
"""

from __future__ import annotations

import dataclasses
import hashlib

from ..numbers import metric_text
from .backend import EvalResult, FailureKind

#: A correct result may undercut the backend's lower bound by this fraction before it is
#: refused. Bounds are rooflines computed from the same constants as the metric; the margin
#: absorbs their rounding, never a real speed-up.
LOWER_BOUND_TOLERANCE = 0.01

#: ``EvalResult.status`` of a result refused for beating the backend's lower bound.
IMPOSSIBLE_RESULT = "impossible_result"


def below_lower_bound(
    metric: float, bound: float | None, tolerance: float = LOWER_BOUND_TOLERANCE
) -> bool:
    """Whether ``metric`` is faster than any program can be, given the backend's bound."""
    return bound is not None and bound > 0 and metric < bound * (1.0 - tolerance)


def refuse_impossible(result: EvalResult, bound: float | None) -> EvalResult:
    """The result, or a ``rejected`` one with status ``impossible_result`` when its metric is
    below the lower bound: a harness was fooled or a model is wrong, and either way the
    number must not win a beam. The claimed metric stays in ``extra["refused_metric"]``."""
    if not result.correct or result.metric is None or not below_lower_bound(result.metric, bound):
        return result
    assert bound is not None
    note = (
        f"Refused: the measured {metric_text(result.metric)} {result.unit} is below the lower bound "
        f"{metric_text(bound)} {result.unit} that no correct program can beat, so the measurement "
        "cannot be trusted (the harness was fooled, or the candidate skipped work where it "
        "was timed)."
    )
    return dataclasses.replace(
        result,
        correct=False,
        metric=None,
        failure=FailureKind.REJECTED,
        status=IMPOSSIBLE_RESULT,
        feedback=f"{note}\n{result.feedback}".rstrip(),
        extra={**result.extra, "refused_metric": float(result.metric), "lower_bound": float(bound)},
    )


def evaluation_seeds(base_seed: int, problem_id: str, code: str, count: int) -> list[int]:
    """``count`` 32-bit input seeds for evaluating ``code``: fixed by (run seed, problem,
    program), so a run replays exactly, yet different for every program: no program can carry
    an answer made for its own inputs (the answer would change the hash). Not a secret: a
    program that reads its own source can compute them, and learns no more than its inputs."""
    digest = hashlib.sha256(f"{base_seed}\0{problem_id}\0{code}".encode()).digest()
    while len(digest) < 4 * count:
        digest += hashlib.sha256(digest).digest()
    return [int.from_bytes(digest[4 * i : 4 * i + 4], "little") for i in range(count)]
