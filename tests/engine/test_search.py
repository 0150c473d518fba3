"""The beam search end to end: real toy evaluations, real SDK calls to the test server."""
from __future__ import annotations

import json

import pytest

from autocomp_core.api import optimize_async
from autocomp_core.store import RunStore
from conftest import toy_config


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

    summary = optimize(toy_config(thread_server, tmp_path, iterations=1, plans_per_candidate=1,
                                  codes_per_plan=1))
    assert summary.stop_reason == "completed" and (tmp_path / "run" / "best.py").exists()
