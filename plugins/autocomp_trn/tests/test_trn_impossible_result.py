"""A result below the speed-of-light bound is refused the engine's way: status
``impossible_result``, by the plugin's own evaluator and by the engine alike."""
from __future__ import annotations

import asyncio

from autocomp_core.backend import EvalContext, FailureKind
from autocomp_core.journal import evaluate_guarded
from autocomp_core.validity import IMPOSSIBLE_RESULT, LOWER_BOUND_TOLERANCE

from autocomp_trn.backend import TrnBackend
from autocomp_trn.judge import refuse_below_bound
from autocomp_trn.kernels import optimized_source


def test_the_plugin_applies_the_engines_tolerance():
    at_bound = {"status": "ok", "latency_us": 10.0 * (1 - LOWER_BOUND_TOLERANCE / 2), "lower_bound_us": 10.0}
    assert refuse_below_bound(dict(at_bound))["status"] == "ok"
    below = refuse_below_bound({**at_bound, "latency_us": 5.0})
    assert below["status"] == below["code"] == IMPOSSIBLE_RESULT


def test_the_engine_refuses_a_trn_result_below_the_bound(monkeypatch):
    backend = TrnBackend({"mode": "emulator"}, {"seeds": 2})
    problem = backend.load_problem("tutorial/gemm")
    monkeypatch.setattr(TrnBackend, "metric_lower_bound", lambda self, p: 1e9)
    result = asyncio.run(evaluate_guarded(backend, problem, optimized_source("tutorial/gemm"), EvalContext()))
    assert result.status == IMPOSSIBLE_RESULT and result.failure is FailureKind.REJECTED
