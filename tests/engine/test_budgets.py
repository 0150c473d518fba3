"""Budgets stop a run cleanly, with its state saved and the reason in the summary;
under injected LLM faults a run still completes and records every failure."""
from __future__ import annotations

import json

import pytest
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.runner import resume_async
from autocomp_core.store import RunStore
from autocomp_core.testing.llm_server import FaultPlan, LLMTestServer
from conftest import toy_config

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("budget,reason", [
    ({"llm_calls": 5}, "budget.llm_calls"),
    ({"tokens": 3000}, "budget.tokens"),
    ({"evaluations": 3}, "budget.evaluations"),
    ({"wall_s": 2.0}, "budget.wall_s"),
])
async def test_budget_stops_cleanly_and_resume_continues(llm_server, tmp_path, budget, reason):
    cfg = toy_config(llm_server, tmp_path, iterations=3, plans_per_candidate=3, codes_per_plan=2)
    cfg["budget"] = budget
    if reason == "budget.wall_s":
        cfg["backend_options"] = {"delay_s": 1.0}  # iteration 1 alone takes > 2 s
    summary = await optimize_async(cfg)
    assert summary.stop_reason == reason
    data = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert data["stop_reason"] == reason
    store = RunStore(tmp_path / "run")
    if reason == "budget.llm_calls":
        assert store.count("llm_calls") <= 5 + 16  # at most the calls already in flight
    if reason == "budget.evaluations":
        assert data["evaluations"] <= 3 + 8
    assert store.beam(0) is not None  # the state is saved
    store.close()
    key = next(iter(budget))
    raised = {"llm_calls": 10_000, "tokens": 10**9, "evaluations": 10_000, "wall_s": 600}[key]
    resumed = await resume_async(tmp_path / "run", progress=False,
                                 overrides=[f"budget.{key}={raised}"])
    assert resumed.stop_reason == "completed"
    store = RunStore(tmp_path / "run")
    assert store.beam(3) is not None
    store.close()


async def test_usd_budget_with_priced_model(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        prices = tmp_path / "prices.toml"
        prices.write_text('["openai-compatible".scripted]\ninput = 1000.0\noutput = 1000.0\n')
        cfg = toy_config(server, tmp_path, iterations=3)
        cfg["llm"]["prices_file"] = str(prices)
        cfg["budget"] = {"usd": 1.0}
        summary = await optimize_async(cfg)
        assert summary.stop_reason == "budget.usd"
        assert summary.data["cost_usd"] >= 1.0


async def test_run_completes_under_30_percent_faults(tmp_path):
    faults = FaultPlan(rate=0.3, hang_s=5, retry_after_s=0.05)
    async with LLMTestServer(lambda r: reply(r.prompt), faults=faults, seed=11) as server:
        cfg = toy_config(server, tmp_path, iterations=2, plans_per_candidate=3)
        cfg["llm"] = {"max_retries": 1, "timeout_s": 2, "backoff_base_s": 0.01,
                      "backoff_max_s": 0.05}
        summary = await optimize_async(cfg)
        assert summary.stop_reason == "completed"
        faulted = [r for r in server.requests if r.fault is not None]
        assert faulted
        store = RunStore(tmp_path / "run")
        failed_calls = [c for c in store.llm_calls() if not c["ok"]]
        recorded_errors = sum(len(c["response"]["errors"]) for c in store.llm_calls())
        # every injected fault is on record (as a retried attempt or a failed call)
        assert recorded_errors >= len([f for f in faulted if f.fault.value != "truncate"])
        assert len(store.events("llm_error")) == len(failed_calls)
        assert summary.data["llm_calls"] == store.count("llm_calls")
        store.close()
