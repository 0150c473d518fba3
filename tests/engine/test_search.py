"""The beam search end to end: real toy evaluations, real SDK calls to the test server."""

from __future__ import annotations

import itertools
import json

import pytest
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.engine.drafts import assign_model, sample_of
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer


@pytest.mark.asyncio
async def test_default_run_improves_and_writes_exports(llm_server, tmp_path):
    cfg = toy_config(llm_server, tmp_path)
    summary = await optimize_async(cfg)
    run = tmp_path / "run"
    assert summary.stop_reason == "completed"
    assert summary.data["best_score"] < summary.data["initial_score"]
    # plans: 3 per parent; codes: 2 per plan; iteration 1 has one parent (the root)
    assert summary.data["llm_by_phase"]["plan"]
    for name in ("best.py", "summary.json", "report.md", "config.toml", "run.sqlite"):
        assert (run / name).exists(), name
    assert json.loads((run / "summary.json").read_text())["speedup"] > 1
    assert (run / "candidates" / "iter-1" / "index.json").exists()
    store = RunStore(run)
    assert len(store.beam(2)) <= 2
    assert store.count("llm_calls") == llm_server.request_count
    store.close()


def test_sync_python_api(thread_server, tmp_path):
    from autocomp_core import optimize

    summary = optimize(
        toy_config(thread_server, tmp_path, iterations=1, plans_per_candidate=1, codes_per_plan=1)
    )
    assert summary.stop_reason == "completed" and (tmp_path / "run" / "best.py").exists()


# -- every model of an ensemble gets work ---------------------------------------------------


def test_assign_model_spreads_every_shape_over_every_model():
    """For ensembles of 1 to 6 models and a grid of beam / plans / codes shapes, each model
    gets a request within one iteration as soon as there are as many requests as models:
    plans (beam x plans), their programs (x codes), direct programs and combinations."""
    for n in range(1, 7):
        models = [f"m{k}" for k in range(n)]
        for beam, plans, codes in itertools.product(range(1, 5), range(1, 6), range(1, 4)):
            plan_models = {
                assign_model(models, b, p, plans) for b in range(beam) for p in range(plans)
            }
            code_models = {
                assign_model(models, b, p * codes + k, plans * codes)
                for b in range(beam)
                for p in range(plans)
                for k in range(codes)
            }
            if beam * plans >= n:
                assert plan_models == set(models), (n, beam, plans)
            if beam * plans * codes >= n:
                assert code_models == set(models), (n, beam, plans, codes)
            pairs = {
                assign_model(models, pair, k, codes) for pair in range(beam) for k in range(codes)
            }
            if beam * codes >= n:
                assert pairs == set(models), (n, beam, codes)


@pytest.mark.asyncio
async def test_four_code_models_with_two_plans_of_one_code_all_write(llm_server, tmp_path):
    """The shape that left two of four coders idle: beam 2, 2 plans each, 1 program per plan."""
    base = f"openai-compatible@{llm_server.openai_base_url}::"
    coders = [f"{base}coder-{k}" for k in range(4)]
    cfg = toy_config(
        llm_server,
        tmp_path,
        iterations=2,
        beam_size=2,
        plans_per_candidate=2,
        codes_per_plan=1,
        prevent_duplicate_level=-1,
        keep_factor=100.0,
    )
    cfg["models"] = {"plan": [base + "planner"], "code": coders}
    await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    assert len(store.beam(1)) == 2  # iteration 2 has two parents: four code requests
    second = [
        c
        for c in store.llm_calls()
        if c["phase"] == "code" and "phase 2 of" in c["request"]["dynamic"]
    ]
    assert len(second) == 4
    assert sorted(c["model"] for c in second) == coders
    store.close()


# -- the two schedules, from the journal's times ----------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("schedule", ["pipelined", "barrier"])
async def test_pipelined_evaluates_before_the_last_plan_and_barrier_does_not(tmp_path, schedule):
    slow_plan = sample_of("i1-root-p2")  # the last plan of iteration 1 answers late

    def latency(request) -> float:
        return 3.0 if request.params.get("seed") == slow_plan else 0.0

    async with LLMTestServer(lambda r: reply(r.prompt), latency=latency) as server:
        cfg = toy_config(
            server,
            tmp_path,
            iterations=1,
            plans_per_candidate=3,
            codes_per_plan=1,
            schedule=schedule,
        )
        await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    plans_answered = [c["created"] for c in store.llm_calls() if c["phase"] == "plan"]
    assert len(plans_answered) == 3
    evaluated = store.evaluations()
    keys = {c.eval_key for c in store.candidates(1) if c.eval_key}
    started = [
        created - result["duration_s"]
        for key, (result, created) in evaluated.items()
        if key in keys
    ]
    assert started
    if schedule == "pipelined":
        assert min(started) < max(plans_answered)
    else:
        assert min(started) >= max(plans_answered)
    store.close()
