"""The adversarial suite through the real evaluator (sandboxed tracing, trusted replay): each
hostile or broken candidate is refused with its reason; with the static screen off the runtime
and the replay still refuse it; honest kernels pass in the same run."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from autocomp_trn.adversarial import CASES, HONEST, PRICED, ROOT
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
        "a link planted for the engine to write through",
        "a standard module planted for the replay to import",
        "a false 0/1 matmul hint",
        "a narrower output dtype",
        "a scratch tensor larger than HBM",
        "softmax without the max subtraction",
        "a status nested past the parser's stack",
        "attention without the max subtraction",
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


#: the default limits: an honest kernel refused for a slow, shared machine proves nothing
HONEST_EVALUATOR = EmulatorEvaluator(Settings(seeds=2))


@pytest.mark.parametrize("case", HONEST, ids=[c.file for c in HONEST])
def test_each_honest_fixture_is_accepted(case):
    verdict = asyncio.run(HONEST_EVALUATOR.evaluate(spec_by_id(case.problem), case.source))
    assert verdict.ok, verdict.message
    assert verdict.latency_us > 0


@pytest.mark.parametrize("case", PRICED, ids=[c.file for c in PRICED])
def test_each_mispriced_kernel_is_modelled_no_faster_than_its_honest_twin(case):
    """The issue 33 red team's pricing attacks (a08, a12) in our words: accepted, at no less
    than the honest kernel's modelled latency."""
    evaluator = EmulatorEvaluator(Settings(generation=case.generation, seeds=2))
    spec = spec_by_id(case.problem)
    hostile = asyncio.run(evaluator.evaluate(spec, case.source))
    honest = asyncio.run(evaluator.evaluate(spec, case.honest_source))
    assert hostile.ok and honest.ok, (hostile.message, honest.message)
    assert hostile.latency_us >= honest.latency_us


def _escaped_path() -> Path:
    """Where h19's link points: outside every sandbox, in the engine's temp dir."""
    source = (ROOT / "hacks" / "h19_symlink_for_the_engine.py").read_text()
    return Path(source.split('ESCAPED = "', 1)[1].split('"', 1)[0])


@pytest.mark.parametrize("use_screen", [True, False])
def test_the_engine_writes_nothing_through_a_link_the_kernel_planted(use_screen):
    """h19: the kernel plants links named like request files in its work dir; the engine writes
    no file there once the kernel has run (the replay gets its request and the trace on stdin,
    in a dir of its own), so nothing lands outside the sandbox, and the verdict is the kernel's
    own failure, never the evaluator's (infra_error is retried for free)."""
    escaped = _escaped_path()
    escaped.unlink(missing_ok=True)
    try:
        verdict = evaluate(
            "tutorial/rmsnorm",
            (ROOT / "hacks" / "h19_symlink_for_the_engine.py").read_text(),
            use_screen=use_screen,
        )
        assert not os.path.lexists(escaped)
        assert verdict.status == "wrong_answer", verdict.message
    finally:
        escaped.unlink(missing_ok=True)


@pytest.mark.parametrize("preload", [True, False])
def test_a_module_planted_by_the_trace_is_never_imported_by_the_replay(preload):
    """h20: the trace step writes json.py, numpy.py, math.py into its dir; a replay started as a
    fresh interpreter there imported them and printed their verdict (ok, 20.31 us). The replay
    now runs in a dir the trace never could write, with the working dir off sys.path."""
    forged = EmulatorEvaluator(Settings(seeds=2, trace_timeout_s=6, preload=preload))
    verdict = asyncio.run(
        forged.evaluate(
            spec_by_id("tutorial/rmsnorm"),
            (ROOT / "hacks" / "h20_planted_standard_module.py").read_text(),
        )
    )
    assert verdict.status == "wrong_answer", verdict.message
    assert "forged" not in verdict.summary


def test_a_replay_out_of_memory_is_the_kernels_failure():
    """h23 on trn2 (96 GiB of HBM: the 64 GiB scratch fits the device) exhausts the replay's
    memory limit: refused as the kernel's failure, not the evaluator's infra_error."""
    case = next(c for c in CASES if c.file.startswith("h23"))
    trn2 = EmulatorEvaluator(Settings(generation="trn2", seeds=2))
    verdict = asyncio.run(trn2.evaluate(spec_by_id(case.problem), case.source))
    assert (verdict.status, verdict.code) == ("rejected", "err_replay_memory"), verdict.message
