"""Budgets stop a run cleanly, with its state saved and the reason in the summary;
under injected LLM faults a run still completes and records every failure."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.ledger.store import RunStore
from autocomp_core.run.runner import resume_async
from autocomp_core.testing.llm_server import FaultPlan, LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "budget,reason",
    [
        ({"llm_calls": 5}, "budget.llm_calls"),
        ({"tokens": 3000}, "budget.tokens"),
        ({"evaluations": 3}, "budget.evaluations"),
        ({"wall_s": 2.0}, "budget.wall_s"),
    ],
)
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
        assert store.count("llm_calls") == 5 == llm_server.request_count  # not one more
    if reason == "budget.evaluations":
        assert data["evaluations"] == 3
    # a call the server answered is journaled: none was cancelled in flight
    assert store.count("llm_calls") == llm_server.request_count
    assert store.beam(0) is not None  # the state is saved
    store.close()
    key = next(iter(budget))
    raised = {"llm_calls": 10_000, "tokens": 10**9, "evaluations": 10_000, "wall_s": 600}[key]
    resumed = await resume_async(
        tmp_path / "run", progress=False, overrides=[f"budget.{key}={raised}"]
    )
    assert resumed.stop_reason == "completed"
    store = RunStore(tmp_path / "run")
    assert store.beam(3) is not None
    store.close()


@pytest.mark.asyncio
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


@pytest.mark.asyncio
async def test_run_completes_under_30_percent_faults(tmp_path):
    faults = FaultPlan(rate=0.3, hang_s=5, retry_after_s=0.05)
    async with LLMTestServer(lambda r: reply(r.prompt), faults=faults, seed=11) as server:
        cfg = toy_config(server, tmp_path, iterations=2, plans_per_candidate=3)
        cfg["llm"] = {
            "max_retries": 1,
            "timeout_s": 2,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
        }
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


@pytest.mark.asyncio
async def test_calls_in_flight_when_a_budget_is_reached_finish_and_are_journaled(tmp_path):
    """Twelve calls at once against a token budget the first answers exhaust: the calls
    already sent finish and are journaled (paid for, never lost); none is sent after."""
    async with LLMTestServer(lambda r: reply(r.prompt), latency=0.3) as server:
        cfg = toy_config(server, tmp_path, iterations=2, plans_per_candidate=12, codes_per_plan=1)
        cfg["budget"] = {"tokens": 1}
        cfg["llm"]["max_concurrency"] = 4
        summary = await optimize_async(cfg)
        assert summary.stop_reason == "budget.tokens"
        store = RunStore(tmp_path / "run")
        assert server.request_count == store.count("llm_calls") == 4  # one batch in flight
        assert summary.data["llm_calls"] == 4
        store.close()


def unpriced_config(tmp_path, model: str, **budget) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(
        f'backend = "toy"\nproblem = "sum_squares"\n[models]\nplan = ["{model}"]\n'
        + "".join(f"[budget]\n{k} = {v}\n" for k, v in budget.items())
    )
    return path


def test_usd_budget_with_a_model_that_has_no_price_is_refused_up_front(tmp_path):
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-0000000000", "HOME": str(tmp_path)}
    config = unpriced_config(tmp_path, "openai::gpt-unpriced-9", usd=5.0)
    out = subprocess.run(
        [*CLI, "optimize", str(config), "--run-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: budget.usd: model openai::gpt-unpriced-9 has no price, so its calls would "
        "count as $0; give one in [llm] prices_file or inline as "
        '[llm.prices.openai."gpt-unpriced-9"] input = ..., output = ... (USD per million '
        "tokens)"
    ]
    assert not (tmp_path / "r").exists()


def test_usd_budget_over_a_remote_openai_compatible_model_without_a_price_is_refused(tmp_path):
    """A paid remote endpoint (OpenRouter, a company gateway) has no price of ours: the
    budget is refused up front instead of counting its calls as $0 (which never binds)."""
    env = {**os.environ, "HOME": str(tmp_path)}
    model = "openai-compatible@https://openrouter.ai/api/v1::qwen/qwen3-coder"
    out = subprocess.run(
        [
            *CLI,
            "optimize",
            str(unpriced_config(tmp_path, model, usd=5.0)),
            "--run-dir",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2, out.stderr
    assert f"error: budget.usd: model {model} has no price" in out.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.asyncio
async def test_an_inline_price_makes_the_usd_budget_bind(tmp_path, monkeypatch):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        cfg = toy_config(server, tmp_path, iterations=3)
        cfg["models"] = {"plan": [f"openai@{server.openai_base_url}::gpt-unpriced-9"]}
        cfg["llm"]["prices"] = {"openai": {"gpt-unpriced-9": {"input": 1000.0, "output": 1000.0}}}
        cfg["budget"] = {"usd": 1.0}
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000")
        summary = await optimize_async(cfg)
        assert summary.stop_reason == "budget.usd"
        assert 1.0 <= summary.data["cost_usd"]
        assert {r.api for r in server.requests} == {"openai"}
