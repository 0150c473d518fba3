"""The trn backend as the engine sees it, on real sandboxed runs of the emulator: the contract, the
problems and knowledge pack, each failure kind, the metric, options, resources and the lifecycle."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pydantic
import pytest
from autocomp_core import EvalContext, EvalResult, FailureKind, PreloadServer
from autocomp_core.contract.resources import local_slots
from autocomp_core.testing import check_backend

from autocomp_trn import neuron
from autocomp_trn.backend import TrnBackend
from autocomp_trn.evaluate import STEPS, EmulatorEvaluator, Settings, child_env
from autocomp_trn.kernels import optimized_source
from autocomp_trn.problems.catalog import spec_by_id

BACKEND = TrnBackend({"mode": "emulator", "generation": "trn1"}, {"seeds": 2})
ROPE = BACKEND.load_problem("advanced/rope").baseline_code


async def evaluate(problem: str, code: str, backend: TrnBackend = BACKEND, **ctx) -> EvalResult:
    return await backend.evaluate(backend.load_problem(problem), code, EvalContext(**ctx))


@pytest.mark.asyncio
async def test_the_backend_keeps_the_contract():
    # (every baseline is judged once, for the whole suite, by test_trn_suite.py)
    await check_backend(TrnBackend({"mode": "emulator"}))


def test_problems_and_context():
    ids = [p.id for p in BACKEND.problems()]
    assert len(ids) == 25 and "tutorial/gemm" in ids and "pytorch/softmax" in ids
    # the @legacy ids are reachable by id, not listed
    assert "llama/mlp_decode_b32" in ids and "tutorial/gemm@legacy" not in ids
    gemm = BACKEND.load_problem("tutorial/gemm")
    assert "lhsT" in gemm.context and "speed-of-light bound" in gemm.context
    assert BACKEND.metric_lower_bound(gemm) > 0
    with pytest.raises(KeyError, match="unknown problem"):
        BACKEND.load_problem("tutorial/nope")


def test_the_knowledge_pack():
    pack = BACKEND.knowledge(BACKEND.load_problem("tutorial/gemm"))
    assert len(pack.menu) >= 40
    assert pack.translation_menu  # what makes the engine offer translation runs
    assert pack.isa and pack.architecture and pack.rules_coding
    assert all(e.triggers for e in pack.examples) and len(pack.examples) >= 3
    assert any(e.triggered_by("use an online softmax") for e in pack.examples)


@pytest.mark.asyncio
async def test_a_faster_kernel_scores_lower_and_the_hardware_scales_the_metric():
    baseline = await evaluate("tutorial/gemm", BACKEND.load_problem("tutorial/gemm").baseline_code)
    faster = await evaluate("tutorial/gemm", optimized_source("tutorial/gemm"))
    assert baseline.correct and faster.correct, (baseline.feedback, faster.feedback)
    assert faster.metric < baseline.metric / 2
    trn2 = await evaluate(
        "tutorial/gemm",
        optimized_source("tutorial/gemm"),
        TrnBackend({"mode": "emulator", "generation": "trn2"}, {"seeds": 1}),
    )
    assert (
        trn2.correct and trn2.metric != faster.metric
    )  # the backend's own hardware, not the context's


@pytest.mark.asyncio
async def test_an_evaluation_reports_the_modelled_latency_and_the_engines():
    result = await evaluate("advanced/rope", ROPE)
    assert result.correct and result.unit == "modelled us"
    assert "modelled latency" in result.feedback and "critical engine" in result.feedback
    assert result.extra["lower_bound_us"] < result.metric and result.extra["busy_dve_us"] > 0
    quiet = await evaluate("advanced/rope", ROPE, want_feedback=False)
    assert quiet.metric == result.metric and "critical engine" not in quiet.feedback


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "code, failure, says",
    [
        (
            ROPE.replace("x_lo = nl.ndarray((half, tile_s)", "x_lo = nl.ndarray((256, tile_s)"),
            FailureKind.COMPILE_ERROR,
            "x_lo = nl.ndarray((256, tile_s)",
        ),
        (
            ROPE.replace("op=nl.subtract", "op=nl.add"),
            FailureKind.WRONG_ANSWER,
            "differs from the reference",
        ),
        ("import os\n" + ROPE, FailureKind.REJECTED, "kernels may import only"),
    ],
    ids=["compile_error", "wrong_answer", "rejected"],
)
async def test_each_failure_kind(code, failure, says):
    result = await evaluate("advanced/rope", code)
    assert not result.correct and result.failure is failure, result.feedback
    assert says in result.feedback


@pytest.mark.asyncio
async def test_an_endless_kernel_times_out_at_the_runs_limit():
    spin = ROPE.replace(
        "    half = d_head // 2\n",
        "    half = d_head // 2\n    n = 0\n    while n >= 0:\n        n += 1\n",
    )
    result = await evaluate("advanced/rope", spin, timeout_s=3)
    assert result.failure is FailureKind.TIMEOUT and "3 s limit" in result.feedback, result.feedback


@pytest.mark.asyncio
async def test_the_pytorch_source_of_a_translation_problem_is_its_baseline_and_no_candidate():
    pytest.importorskip("torch")
    problem = BACKEND.load_problem("pytorch/swiglu")
    root = await evaluate("pytorch/swiglu", problem.baseline_code)
    assert root.correct and "framework lowering" in root.feedback
    other = await evaluate(
        "pytorch/swiglu", problem.baseline_code.replace("F.silu(a) * b", "a * b")
    )
    assert other.failure == FailureKind.REJECTED and "kernels may import only" in other.feedback


def test_unknown_options_and_hardware_are_refused():
    with pytest.raises(pydantic.ValidationError, match="seedz"):
        TrnBackend({}, {"seedz": 2})
    with pytest.raises(pydantic.ValidationError, match="seeds"):
        TrnBackend({}, {"seeds": 0})
    with pytest.raises(pydantic.ValidationError, match="generation"):
        TrnBackend({"generation": "trn9"})
    assert TrnBackend({}, {"seeds": "4"}).options.seeds == 4  # typed: the engine gets an int


def test_emulator_mode_needs_a_core_and_the_memory_of_one_evaluation():
    backend = TrnBackend({"mode": "emulator"}, {"memory_mb": 2048})
    resources = backend.resources()
    assert (resources.cpus, resources.memory_mb, dict(resources.custom)) == (1, 2048, {})
    assert local_slots(resources, {"cpus": 4, "memory_mb": 5000}) == 2


def neuron_backend(cores: int, **options) -> TrnBackend:
    backend = TrnBackend({"mode": "neuron", "generation": "trn2"}, options)
    backend.neuron_env = neuron.NeuronEnv(
        devices=[f"/dev/neuron{i}" for i in range(cores // 8)],
        cores=cores,
        v1=True,
        v2=False,
        profiler=None,
    )
    return backend


def test_neuron_mode_holds_one_neuron_core_per_evaluation():
    resources = neuron_backend(16).resources()
    assert dict(resources.custom) == {"neuron_cores": 1}
    assert dict(resources.available) == {"neuron_cores": 16}
    assert local_slots(resources, {"cpus": 64, "memory_mb": 1 << 20}) == 16
    assert (
        local_slots(
            neuron_backend(16, neuron_cores=3).resources(), {"cpus": 64, "memory_mb": 1 << 20}
        )
        == 3
    )
    with pytest.raises(
        ValueError, match="one evaluation needs 1 neuron_cores, and this machine offers 0"
    ):
        local_slots(neuron_backend(0).resources(), {"cpus": 64, "memory_mb": 1 << 20})


def test_closing_keeps_nothing_from_the_run():
    backend = neuron_backend(16)
    used = backend.neuron_evaluator

    async def run_and_close():
        async with backend:
            pass
        await backend.aclose()  # twice: harmless

    anyio.run(run_and_close)
    assert backend.neuron_evaluator is not used  # the NeuronCore queue of the last run is gone


def test_the_engine_side_never_loads_the_emulators_numeric_types():
    """ml_dtypes takes most of a second to load: every CLI call and engine process would pay it.
    Listing problems and computing bounds needs only the element sizes, which must agree."""
    script = (
        "import sys\n"
        "from autocomp_trn.backend import TrnBackend\n"
        "b = TrnBackend(hardware={'mode': 'emulator'})\n"
        "assert all(b.metric_lower_bound(p) > 0 for p in b.problems())\n"
        "assert 'ml_dtypes' not in sys.modules, 'ml_dtypes loaded'\n"
        "from autocomp_trn.emulator import dtypes\n"
        "assert dtypes.ITEMSIZE == {n: d.itemsize for n, d in dtypes.DTYPES.items()}\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_steps_are_forked_from_a_preload_server_and_judge_as_fresh_ones():
    spec = spec_by_id("tutorial/rmsnorm")
    server = PreloadServer.shared(list(STEPS.values()), child_env())
    server.close()  # (another test of this process may have started it)

    def evaluate(settings: Settings):
        evaluator = EmulatorEvaluator(settings)
        return anyio.run(lambda: evaluator.evaluate(spec, spec.baseline_code()))

    fresh = evaluate(Settings(preload=False))
    assert server._proc is None
    forked = evaluate(Settings())
    assert server._proc is not None and server._proc.poll() is None
    assert fresh.status == "ok", fresh.message
    assert (forked.status, forked.latency_us, forked.summary) == (
        fresh.status,
        fresh.latency_us,
        fresh.summary,
    )
