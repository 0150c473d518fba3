"""Schedule reuse: a finished run's winning plans, applied in order to a new run's baseline
before its search, seed the first beam."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.engine.reuse import donor_schedule
from autocomp_core.errors import ConfigError
from autocomp_core.ledger.store import Origin, RunStore
from autocomp_core.run.runner import resume_async
from autocomp_core.testing.llm_server import LLMTestServer


@pytest_asyncio.fixture
async def donor(tmp_path):
    """A finished toy run whose best was reached through plans."""
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        summary = await optimize_async(toy_config(server, tmp_path / "donor", iterations=2))
    assert summary.data["speedup"] > 1
    return tmp_path / "donor" / "run", summary


@pytest.mark.asyncio
async def test_the_donors_plans_seed_the_first_beam(donor, tmp_path):
    run_dir, donated = donor
    schedule = donor_schedule(run_dir)
    assert schedule.backend == "toy" and len(schedule.steps) >= 1
    assert all(step.plan and step.gain > 0 for step in schedule.steps)
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        # no iterations at all: anything better than the baseline came from the donor's plans
        cfg = toy_config(server, tmp_path / "new", iterations=0, reuse=[str(run_dir)])
        cfg["seed"] = 99
        summary = await optimize_async(cfg)
        prompts = [r.prompt for r in server.requests]
    assert summary.data["speedup"] == pytest.approx(donated.data["speedup"])
    store = RunStore(tmp_path / "new" / "run")
    reused = [c for c in store.candidates(0) if c.origin == Origin.REUSE]
    assert [c.plan for c in reused] == [step.plan for step in schedule.steps]
    assert summary.data["best_candidate"] == reused[-1].id
    assert reused[-1].id in store.beam(0)
    # each step implemented the donor's plan on the program the step before reached
    for step, prompt in zip(schedule.steps, prompts, strict=True):
        assert f"## Plan\n{step.plan}" in prompt
    record = store.get_meta("reuse")
    assert [r["outcome"] for r in record] == ["applied"] * len(schedule.steps)
    assert [r["candidate"] for r in record] == [c.id for c in reused]
    store.close()
    # a resumed run applies no schedule twice: every answer from the journal, no new call
    again = await resume_async(tmp_path / "new" / "run", progress=False)
    assert again.data["best_candidate"] == summary.data["best_candidate"]
    assert len([c for c in RunStore(tmp_path / "new" / "run").candidates(0)]) == len(reused) + 1


@pytest.mark.asyncio
async def test_a_donor_of_another_backend_or_without_a_schedule_is_refused(donor, tmp_path):
    run_dir, _ = donor
    store = RunStore(run_dir)
    store.set_meta("config", {**store.get_meta("config"), "backend": "gemmini"})
    store.close()
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        cfg = toy_config(server, tmp_path / "new", iterations=1, reuse=[str(run_dir)])
        with pytest.raises(ConfigError, match="is a gemmini run and this is toy"):
            await optimize_async(cfg)
        flat = toy_config(server, tmp_path / "flat", iterations=0)
        await optimize_async(flat)  # its best is its baseline: nothing to reuse
        cfg = toy_config(
            server, tmp_path / "new2", iterations=1, reuse=[str(tmp_path / "flat" / "run")]
        )
        with pytest.raises(ConfigError, match="has no schedule to reuse"):
            await optimize_async(cfg)
        cfg = toy_config(server, tmp_path / "new3", iterations=1, reuse=[str(tmp_path / "none")])
        with pytest.raises(ConfigError, match=r"search\.reuse: no run found in"):
            await optimize_async(cfg)
        assert server.request_count == 0


@pytest.mark.asyncio
async def test_a_repaired_step_of_the_donor_is_in_its_schedule(tmp_path):
    """The best program came from a repair (``search.repair_failed``): its plan is a step."""
    tight = "def solution(xs):\n    total = 0\n    for x in xs:\n        total += x * x\n"

    def answer(request) -> str:
        if request.prompt.rstrip().endswith("Plan:"):
            return "Iterate the list directly and square by one multiplication."
        if "## Failing program" in request.prompt:
            return f"```python\n{tight}    return total\n```"
        return f"```python\n{tight}    return total +\n```"  # a syntax error

    async with LLMTestServer(answer) as server:
        cfg = toy_config(server, tmp_path / "donor", iterations=1, repair_failed=True)
        cfg["search"].update(plans_per_candidate=1, codes_per_plan=1)
        summary = await optimize_async(cfg)
    store = RunStore(tmp_path / "donor" / "run")
    best = store.candidate(summary.data["best_candidate"])
    store.close()
    assert best is not None and best.origin == Origin.REPAIR
    (step,) = donor_schedule(tmp_path / "donor" / "run").steps
    assert step.plan == best.plan and step.gain > 1


@pytest.mark.asyncio
async def test_a_step_that_fails_is_skipped_and_recorded_without_a_score(donor, tmp_path):
    run_dir, _ = donor
    wrong = "```python\ndef solution(xs):\n    return 0\n```"
    async with LLMTestServer(lambda r: wrong) as server:
        cfg = toy_config(server, tmp_path / "new", iterations=0, reuse=[str(run_dir)])
        summary = await optimize_async(cfg)
    assert summary.data["best_candidate"] == "root"
    store = RunStore(tmp_path / "new" / "run")
    record = store.get_meta("reuse")
    store.close()
    assert record and {r["outcome"] for r in record} == {"skipped"}
    assert all(r["score"] is None for r in record)
    json.dumps(record, allow_nan=False)  # strict JSON: no Infinity for a failed step


@pytest.mark.asyncio
async def test_a_donor_of_another_backend_is_applied_when_asked(donor, tmp_path):
    """Plans can be portable across targets: with ``reuse_across_backends`` a donor of another
    backend's run is applied like one of this backend's (its plans implemented on this
    baseline), and the run's reuse record names it."""
    run_dir, donated = donor
    store = RunStore(run_dir)
    store.set_meta("config", {**store.get_meta("config"), "backend": "gemmini"})
    store.close()
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        cfg = toy_config(server, tmp_path / "new", iterations=0, reuse=[str(run_dir)])
        cfg["search"]["reuse_across_backends"] = True
        summary = await optimize_async(cfg)
    assert summary.data["speedup"] == pytest.approx(donated.data["speedup"])
    new = RunStore(tmp_path / "new" / "run")
    record = new.get_meta("reuse")
    new.close()
    assert record and {r["outcome"] for r in record} == {"applied"}
    assert {r["donor"] for r in record} == {str(run_dir)}
