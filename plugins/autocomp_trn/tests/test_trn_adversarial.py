"""The adversarial suite through the real evaluator (sandboxed tracing, trusted replay): each
hostile or broken candidate is refused with its reason; with the static screen off the runtime
and the replay still refuse it; honest kernels pass in the same run."""

from __future__ import annotations

import asyncio

import pytest

from autocomp_trn.adversarial import CASES
from autocomp_trn.evaluate import EmulatorEvaluator, Settings
from autocomp_trn.kernels import optimized_source
from autocomp_trn.problems.catalog import spec_by_id

EVALUATOR = EmulatorEvaluator(Settings(seeds=2, trace_timeout_s=6))


def evaluate(problem: str, code: str, use_screen: bool = True):
    return asyncio.run(EVALUATOR.evaluate(spec_by_id(problem), code, use_screen=use_screen))


def test_the_suite_covers_the_required_hacks():
    assert len(CASES) >= 12
    covered = {c.what for c in CASES}
    for what in (
        "outputs never written",
        "all zeros",
        "input copied to output",
        "precomputation at import",
        "state cached across calls",
        "shape-conditional fast path",
        "detecting the emulator",
        "reading the reference",
        "monkeypatching the emulator",
        "monkeypatching the cost counters",
        "trace tampering",
        "partition dimension over 128",
        "PSUM overflow",
        "affine_range carried dependency",
        "spinning past the limit",
        "sleeping past the limit",
    ):
        assert what in covered, what


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_each_hack_is_refused_with_its_reason(case):
    verdict = evaluate(case.problem, case.source)
    assert (verdict.status, case.reason in verdict.message) == (case.status, True), verdict.message


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.unscreened], ids=[c.file for c in CASES if c.unscreened]
)
def test_without_the_static_screen_the_runtime_and_replay_still_refuse(case):
    status, reason = case.unscreened
    verdict = evaluate(case.problem, case.source, use_screen=False)
    assert (verdict.status, reason in verdict.message) == (status, True), verdict.message


def test_honest_kernels_are_accepted_in_the_same_run():
    for problem, code in (
        ("tutorial/rmsnorm", spec_by_id("tutorial/rmsnorm").baseline_code()),
        ("advanced/conv1d", optimized_source("advanced/conv1d")),
    ):
        verdict = evaluate(problem, code)
        assert verdict.ok, verdict.message
        assert verdict.latency_us > 0
