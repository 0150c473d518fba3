"""The backend as the engine sees it: problems, the knowledge pack, options, and an evaluation's
EvalResult through the real sandboxed path."""
from __future__ import annotations

import asyncio

import pytest
from autocomp_trn.backend import TrnBackend

from autocomp_core.backend import Capability, EvalContext, FailureKind

BACKEND = TrnBackend({"mode": "emulator"}, {"seeds": 2})


def test_problems_and_context():
    ids = [p.id for p in BACKEND.problems()]
    assert len(ids) == 18 and "tutorial/gemm" in ids and "pytorch/softmax" in ids
    gemm = BACKEND.load_problem("tutorial/gemm")
    assert "lhsT" in gemm.context and "speed-of-light bound" in gemm.context
    assert BACKEND.metric_lower_bound(gemm) > 0
    with pytest.raises(KeyError, match="unknown problem"):
        BACKEND.load_problem("tutorial/nope")


def test_options_are_typed_and_unknown_ones_refused():
    with pytest.raises(ValueError, match="unknown"):
        TrnBackend({}, {"seedz": 2})
    with pytest.raises(ValueError):
        TrnBackend({}, {"seeds": 0})
    with pytest.raises(ValueError):
        TrnBackend({"generation": "trn9"})


def test_the_knowledge_pack():
    pack = BACKEND.knowledge(BACKEND.load_problem("tutorial/gemm"))
    assert len(pack.menu) >= 40
    assert pack.translation_menu and Capability.TRANSLATION in BACKEND.capabilities
    assert pack.isa and pack.architecture and pack.rules_coding
    assert all(e.triggers for e in pack.examples) and len(pack.examples) >= 3
    assert any(e.triggered_by("use an online softmax") for e in pack.examples)


def _evaluate(problem: str, code: str):
    ctx = EvalContext(hardware=BACKEND.hardware, seed=0, want_feedback=True)
    return asyncio.run(BACKEND.evaluate(BACKEND.load_problem(problem), code, ctx))


def test_an_evaluation_reports_the_modelled_latency_and_the_engines():
    problem = BACKEND.load_problem("advanced/rope")
    result = _evaluate("advanced/rope", problem.baseline_code)
    assert result.correct and result.unit == "modelled us"
    assert "modelled latency" in result.feedback and "critical engine" in result.feedback
    assert result.extra["lower_bound_us"] < result.metric and result.extra["busy_dve_us"] > 0


def test_a_compile_error_names_the_kernel_line():
    code = BACKEND.load_problem("advanced/rope").baseline_code.replace("x_lo = nl.load(x[0:half, cols])",
                                                                         "x_lo = nl.load(x[0:256, cols])")
    result = _evaluate("advanced/rope", code)
    assert result.failure == FailureKind.COMPILE_ERROR
    assert "x_lo = nl.load(x[0:256, cols])" in result.feedback and "out of bounds" in result.feedback


def test_the_pytorch_source_of_a_translation_problem_is_its_baseline_and_no_candidate():
    pytest.importorskip("torch")
    problem = BACKEND.load_problem("pytorch/swiglu")
    root = _evaluate("pytorch/swiglu", problem.baseline_code)
    assert root.correct and "framework lowering" in root.feedback
    other = _evaluate("pytorch/swiglu", problem.baseline_code.replace("F.silu(a) * b", "a * b"))
    assert other.failure == FailureKind.REJECTED and "kernels may import only" in other.feedback
