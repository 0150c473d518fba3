"""The engine's own validity rules: results below a backend's lower bound are refused before
selection, and every evaluation draws its own input seeds."""

from __future__ import annotations

import pytest
from engine_helpers import toy_config
from scripted_llm import VARIANTS
from toy_plugin import ToyBackend

from autocomp_core.api import optimize_async
from autocomp_core.contract.backend import FEEDBACK_LIMIT, EvalContext, EvalResult, FailureKind
from autocomp_core.contract.validity import (
    IMPOSSIBLE_RESULT,
    LOWER_BOUND_TOLERANCE,
    below_lower_bound,
    evaluation_seeds,
    refuse_impossible,
)
from autocomp_core.executors.guarded import evaluate_guarded
from autocomp_core.ledger.store import RunStore


def test_below_lower_bound_has_a_small_tolerance():
    assert below_lower_bound(50.0, 100.0)
    assert not below_lower_bound(100.0, 100.0)
    assert not below_lower_bound(100.0 * (1 - LOWER_BOUND_TOLERANCE / 2), 100.0)
    assert below_lower_bound(100.0 * (1 - 2 * LOWER_BOUND_TOLERANCE), 100.0)
    assert not below_lower_bound(1.0, None) and not below_lower_bound(1.0, 0.0)


def test_refuse_impossible_keeps_honest_and_failed_results():
    honest = EvalResult(True, metric=120.0, unit="cycles")
    assert refuse_impossible(honest, 100.0) is honest
    failed = EvalResult(False, failure=FailureKind.WRONG_ANSWER)
    assert refuse_impossible(failed, 100.0) is failed
    assert refuse_impossible(EvalResult(True, metric=1.0), None).correct


def test_refuse_impossible_rejects_and_keeps_the_claim():
    claimed = EvalResult(True, metric=15.0, unit="cycles", feedback="15 cycles", extra={"x": 1.0})
    refused = refuse_impossible(claimed, 1501.0)
    assert not refused.correct and refused.metric is None and refused.score == float("inf")
    assert refused.failure is FailureKind.REJECTED and refused.status == IMPOSSIBLE_RESULT
    assert refused.extra == {"x": 1.0, "refused_metric": 15.0, "lower_bound": 1501.0}
    assert "below the lower bound 1501" in refused.feedback and "15 cycles" in refused.feedback
    assert claimed.correct  # the input is not modified
    assert EvalResult.from_dict(refused.to_dict()) == refused  # journaled as it is


def test_evaluation_seeds_are_per_program_and_replayable():
    a = evaluation_seeds(7, "p", "code a", 3)
    assert a == evaluation_seeds(7, "p", "code a", 3) and len(set(a)) == 3
    assert a != evaluation_seeds(7, "p", "code b", 3)
    assert a != evaluation_seeds(8, "p", "code a", 3)
    assert a != evaluation_seeds(7, "q", "code a", 3)
    assert all(0 <= s < 2**32 for s in evaluation_seeds(1, "p", "c", 20))
    assert evaluation_seeds(1, "p", "c", 20)[:3] == evaluation_seeds(1, "p", "c", 3)


@pytest.mark.asyncio
async def test_the_engine_refuses_results_below_the_bound():
    backend = ToyBackend(options={"claimed_lower_bound": 100.0})
    problem = backend.load_problem("sum_squares")
    ctx = EvalContext(timeout_s=60)
    fast = await evaluate_guarded(backend, problem, VARIANTS["builtin map"], ctx)  # 12 lines
    assert fast.status == IMPOSSIBLE_RESULT and fast.extra["refused_metric"] == 12.0
    slow = await evaluate_guarded(backend, problem, VARIANTS["tight loop"], ctx)
    assert slow.correct and slow.metric > 100.0


@pytest.mark.asyncio
async def test_a_result_below_the_bound_never_enters_the_beam(llm_server, tmp_path):
    cfg = toy_config(llm_server, tmp_path, combine_pairs=1)  # combining answers "builtin map"
    cfg["backend_options"] = {"claimed_lower_bound": 100.0}
    summary = await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    refused = [r for r, _ in store.evaluations().values() if r["status"] == IMPOSSIBLE_RESULT]
    assert refused, "the scripted run should have produced the 12-line program"
    assert summary.data["best_score"] >= 100.0
    last = store.last_iteration()
    assert all(store.candidate(cid).score >= 100.0 for cid in store.beam(last))
    store.close()


def test_a_candidates_text_in_the_feedback_is_bounded():
    """Feedback reaches the journal and the next prompt, and a backend may quote the candidate's
    own words in it (an assertion message, a status it wrote): however long, it is cut to a
    bounded head and tail, like the captured output."""
    flood = "x" * 5_000_000 + "THE END"
    result = EvalResult(correct=False, failure=FailureKind.COMPILE_ERROR, feedback=flood)
    assert len(result.feedback) < FEEDBACK_LIMIT + 100
    assert result.feedback.endswith("THE END")
    assert "characters cut" in result.feedback
    short = EvalResult(correct=False, feedback="line 3: undefined name")
    assert short.feedback == "line 3: undefined name"
