"""The toy backend evaluates real Python programs in real sandboxed subprocesses."""

from __future__ import annotations

import textwrap
import time

import pydantic
import pytest
from toy_plugin import ToyBackend, ToyHardware, ToyOptions

from autocomp_core import Capability, EvalContext, EvalResult, FailureKind
from autocomp_core.contract.plugins import build_registry

FASTER = {
    "sum_squares": """
        def solution(xs):
            total = 0
            for x in xs:
                total += x * x
            return total
    """,
    "prefix_max": """
        from itertools import accumulate

        def solution(xs):
            return list(accumulate(xs, max))
    """,
    "count_pairs": """
        from collections import Counter

        def solution(xs):
            counts = Counter(xs)
            zeros = counts.get(0, 0)
            return zeros * (zeros - 1) // 2 + sum([counts[x] * counts[-x] for x in counts if x > 0])
    """,
    "count_negatives": """
        from bisect import bisect_left

        def solution(xs):
            return bisect_left(sorted(xs), 0)
    """,
}


@pytest.fixture(scope="module")
def backend() -> ToyBackend:
    return ToyBackend()


async def evaluate(backend: ToyBackend, problem_id: str, code: str, **ctx_args) -> EvalResult:
    ctx_args.setdefault("timeout_s", 30.0)
    ctx = EvalContext(**ctx_args)
    return await backend.evaluate(backend.load_problem(problem_id), textwrap.dedent(code), ctx)


def test_registered_through_the_plugin_env_var() -> None:
    registry = build_registry()
    assert not [f for f in registry.failures if "toy" in f.name]
    toy = registry.manager.get_plugin("toy_plugin")
    assert toy is not None
    # Ask only the toy plugin: other plugins under development must not break this test.
    others = [p for p in registry.manager.get_plugins() if p is not toy]
    hook = registry.manager.subset_hook_caller("autocomp_register_backends", others)
    assert hook() == [[ToyBackend]]


def test_problems_knowledge_and_capabilities(backend: ToyBackend) -> None:
    assert [p.id for p in backend.problems()] == [
        "sum_squares",
        "prefix_max",
        "count_pairs",
        "count_negatives",
    ]
    problem = backend.load_problem("count_pairs")
    assert "def solution(xs)" in problem.baseline_code and problem.baseline_path.is_file()
    pack = backend.knowledge(problem)
    assert "line_cost" in pack.architecture
    assert len(pack.menu) == 8 and len(pack.translation_menu) == 2
    assert pack.rules_general and pack.rules_planning and pack.rules_coding
    assert [e.name for e in pack.examples] == [
        "builtins instead of loops",
        "counting with a dictionary",
    ]
    assert pack.examples[1].triggered_by("Count complements with a hash map")
    assert not pack.examples[1].triggered_by("unroll the loop")
    assert backend.capabilities == {Capability.HW_FEEDBACK}
    assert (backend.file_extension, backend.language, backend.metric_unit) == (
        ".py",
        "python",
        "lines",
    )
    assert backend.resources().cpus == 1
    assert all(check.ok for check in backend.doctor())
    with pytest.raises(KeyError, match="unknown problem"):
        backend.load_problem("no_such_problem")


def test_hardware_config_and_options_are_validated() -> None:
    assert ToyBackend({"line_cost": 2}).hardware == ToyHardware(line_cost=2, call_cost=3)
    with pytest.raises(pydantic.ValidationError):
        ToyHardware(line_cost=0)
    with pytest.raises(pydantic.ValidationError):
        ToyHardware(pe_dim=16)
    assert ToyBackend(options={"delay_s": 0.5}).options == ToyOptions(delay_s=0.5)
    for bad in ({"delay": 1}, {"delay_s": "soon"}, {"delay_s": -1}):
        with pytest.raises(pydantic.ValidationError):
            ToyBackend(options=bad)


@pytest.mark.asyncio
@pytest.mark.parametrize("problem_id", sorted(FASTER))
async def test_baseline_is_correct_and_a_faster_variant_scores_lower(
    backend: ToyBackend, problem_id: str
) -> None:
    problem = backend.load_problem(problem_id)
    base = await evaluate(backend, problem_id, problem.baseline_code)
    assert base.correct, base.feedback
    assert base.unit == "lines" and base.failure is None
    assert "hottest lines" in base.feedback
    fast = await evaluate(backend, problem_id, FASTER[problem_id])
    assert fast.correct, fast.feedback
    bound = backend.metric_lower_bound(problem)
    assert bound <= fast.metric < base.metric / 3


@pytest.mark.asyncio
async def test_metric_is_deterministic_and_follows_the_cost_model(backend: ToyBackend) -> None:
    code = backend.load_problem("sum_squares").baseline_code
    first = await evaluate(backend, "sum_squares", code)
    again = await evaluate(
        backend, "sum_squares", code, seed=7
    )  # other check inputs, same workload
    assert first.metric == again.metric
    assert first.extra == again.extra
    pricier = await evaluate(
        ToyBackend(ToyHardware(line_cost=2, call_cost=10)), "sum_squares", code
    )
    lines, calls = first.extra["line_events"], first.extra["call_events"]
    assert first.metric == lines + 3 * calls
    assert pricier.metric == 2 * lines + 10 * calls
    quiet = await evaluate(backend, "sum_squares", code, want_feedback=False)
    assert quiet.metric == first.metric and quiet.feedback == ""


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "problem_id, code, kind, hint",
    [
        (
            "sum_squares",
            "def solution(xs)\n    return 0\n",
            FailureKind.COMPILE_ERROR,
            "SyntaxError",
        ),
        (
            "sum_squares",
            "def answer(xs):\n    return 0\n",
            FailureKind.COMPILE_ERROR,
            "solution(xs)",
        ),
        (
            "sum_squares",
            "def solution(xs):\n    return sum(xs)\n",
            FailureKind.WRONG_ANSWER,
            "expected",
        ),
        (
            "prefix_max",
            "def solution(xs):\n    return sorted(xs)\n",
            FailureKind.WRONG_ANSWER,
            "expected",
        ),
        ("count_pairs", "def solution(xs):\n    return xs[0]\n", FailureKind.CRASH, "IndexError"),
        (
            "count_pairs",
            "raise RuntimeError('at import')\ndef solution(xs):\n    return 0\n",
            FailureKind.CRASH,
            "at import",
        ),
        (
            "count_pairs",
            "import os\ndef solution(xs):\n    os._exit(3)\n",
            FailureKind.CRASH,
            "exit code 3",
        ),
        (
            "sum_squares",
            "def solution(xs):\n    return len(bytearray(1 << 34))\n",
            FailureKind.CRASH,
            "MemoryError",
        ),
        ("sum_squares", "solution = max\n", FailureKind.REJECTED, "defined in the program"),
        (
            "sum_squares",
            "import sys\ndef solution(xs):\n    sys.settrace(None)\n"
            "    return sum(x * x for x in xs)\n",
            FailureKind.REJECTED,
            "trace",
        ),
    ],
)
async def test_each_failure_kind_from_a_real_candidate(
    backend: ToyBackend, problem_id: str, code: str, kind: FailureKind, hint: str
) -> None:
    result = await evaluate(backend, problem_id, code)
    assert not result.correct and result.metric is None
    assert result.failure is kind, result.feedback
    assert hint in result.feedback


@pytest.mark.asyncio
async def test_endless_candidate_times_out(backend: ToyBackend) -> None:
    result = await evaluate(
        backend, "sum_squares", "def solution(xs):\n    while True:\n        pass\n", timeout_s=1.0
    )
    assert result.failure is FailureKind.TIMEOUT and not result.correct


@pytest.mark.asyncio
async def test_candidate_cannot_forge_the_report(backend: ToyBackend) -> None:
    forged = """
        import json, sys
        fake = json.dumps({"status": "ok", "lines": 1, "calls": 0, "runs": 3, "hot": []})
        for stream in (sys.stdout, sys.__stdout__, sys.stderr):
            print("0" * 32, fake, file=stream)

        def solution(xs):
            total = 0
            for x in xs:
                total += x * x
            return total
    """
    result = await evaluate(backend, "sum_squares", forged)
    honest = await evaluate(backend, "sum_squares", FASTER["sum_squares"])
    assert result.correct and result.metric == honest.metric


@pytest.mark.asyncio
async def test_delay_option_stretches_the_evaluation(backend: ToyBackend) -> None:
    code = FASTER["sum_squares"]
    slow_backend = ToyBackend(options={"delay_s": 0.2})
    started = time.monotonic()
    await evaluate(slow_backend, "sum_squares", code)
    assert time.monotonic() - started >= 0.2
