"""A result below the speed-of-light bound is refused the engine's way: status
``impossible_result``, by the plugin's own evaluator and by the engine alike."""

from __future__ import annotations

import asyncio

from autocomp_core.contract.backend import EvalContext, FailureKind
from autocomp_core.contract.validity import IMPOSSIBLE_RESULT, LOWER_BOUND_TOLERANCE
from autocomp_core.executors.guarded import evaluate_guarded

from autocomp_trn.backend import TrnBackend, to_eval_result
from autocomp_trn.evaluate import Verdict, seeds_for
from autocomp_trn.judge import refuse_below_bound
from autocomp_trn.kernels import optimized_source


def test_the_plugin_applies_the_engines_tolerance():
    at_bound = {
        "status": "ok",
        "latency_us": 10.0 * (1 - LOWER_BOUND_TOLERANCE / 2),
        "lower_bound_us": 10.0,
    }
    assert refuse_below_bound(dict(at_bound))["status"] == "ok"
    below = refuse_below_bound({**at_bound, "latency_us": 5.0})
    assert below["status"] == below["code"] == IMPOSSIBLE_RESULT


def test_the_engine_refuses_a_trn_result_below_the_bound(monkeypatch):
    backend = TrnBackend({"mode": "emulator"}, {"seeds": 2})
    problem = backend.load_problem("tutorial/gemm")
    monkeypatch.setattr(TrnBackend, "metric_lower_bound", lambda self, p: 1e9)
    result = asyncio.run(
        evaluate_guarded(backend, problem, optimized_source("tutorial/gemm"), EvalContext())
    )
    assert result.status == IMPOSSIBLE_RESULT and result.failure is FailureKind.REJECTED
    # what the verdict rests on survives the refusal: the program's own seeds, replayable
    assert result.verification["seeds"]["checks"] == seeds_for(
        0, "tutorial/gemm", optimized_source("tutorial/gemm"), 2
    )
    assert "inputs:" in result.verification["shapes"]["timed"] and result.verification["checks"]


def test_the_plugins_own_refusal_becomes_a_rejected_result():
    result = to_eval_result(
        Verdict(IMPOSSIBLE_RESULT, "modelled latency 1.00 us is below the bound"),
        "modelled us",
        5.0,
    )
    assert (
        not result.correct
        and result.status == IMPOSSIBLE_RESULT
        and result.failure is FailureKind.REJECTED
    )
