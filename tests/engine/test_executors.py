"""Executors without a cluster: the built-in ``local``, one a plugin registers, the checks
of ``[executor]``, and a cluster address that does not answer (the Ray cluster itself is
in ``tests/scaleout``)."""

from __future__ import annotations

import io
import json
import subprocess
import time
from pathlib import Path

import pytest
import tomli_w
from engine_helpers import toy_config
from rich.console import Console

from autocomp_core import ConfigError, EvalContext, make_backend
from autocomp_core.api import optimize_async
from autocomp_core.config import BudgetConfig, ExecutorConfig, validate
from autocomp_core.contract.plugins import build_registry
from autocomp_core.contract.resources import Resources
from autocomp_core.engine.journal import Evaluator, JournaledLLM
from autocomp_core.engine.progress import Progress
from autocomp_core.executors import EvalRequest, Executor, create_executor
from autocomp_core.executors.local import LocalExecutor
from autocomp_core.executors.ray_executor import (
    NO_NODES_REASON,
    NoNodes,
    RayExecutor,
    RayOptions,
    fits,
    split_address,
)
from autocomp_core.ledger.accounting import Budget, Ledger, RunStopped
from autocomp_core.ledger.store import ATTEMPT_LOST, INFRA_ERROR, RunStore
from autocomp_core.report.data import run_data
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


@pytest.mark.asyncio
async def test_local_executor_is_built_in_and_says_where_it_ran() -> None:
    specs = build_registry().executors()
    assert {"local", "ray"} <= set(specs)
    executor = create_executor(ExecutorConfig(), specs)
    assert isinstance(executor, LocalExecutor) and isinstance(executor, Executor)
    backend = make_backend("toy")
    problem = backend.load_problem("sum_squares")
    async with executor, backend:
        result = await executor.evaluate(
            EvalRequest(backend, problem, problem.baseline_code, EvalContext(timeout_s=30))
        )
        broken = await executor.evaluate(
            EvalRequest(backend, problem, "def solution(:", EvalContext(timeout_s=30))
        )
    assert result.correct and result.placement["executor"] == "local"
    assert broken.failure.value == "compile_error" and broken.placement["executor"] == "local"
    assert (await executor.describe())["kind"] == "local"


def test_executor_config_is_checked_by_the_executor_it_names() -> None:
    specs = build_registry().executors()
    with pytest.raises(
        ConfigError,
        match=r"executor\.kind: unknown executor 'slurm' "
        r"\(installed: local, ray\)",
    ):
        create_executor(ExecutorConfig(kind="slurm"), specs)
    with pytest.raises(ConfigError, match=r"executor\.address: unknown key"):
        create_executor(ExecutorConfig(kind="local", address="auto"), specs)
    with pytest.raises(ConfigError, match=r"executor\.address: .*expected auto, HOST:PORT"):
        create_executor(ExecutorConfig(kind="ray", address="not an address"), specs)
    with pytest.raises(ConfigError, match=r"executor\.max_retries"):
        create_executor(ExecutorConfig(kind="ray", max_retries=-1), specs)
    ray = create_executor(
        ExecutorConfig(kind="ray", address="ray://10.0.0.1:10001", max_retries=1),
        specs,
        ("extra_plugin",),
    )
    assert isinstance(ray, RayExecutor) and ray.plugins == ("extra_plugin",)
    assert ray.options == RayOptions(address="ray://10.0.0.1:10001", max_retries=1)
    config = validate(
        {
            "backend": "toy",
            "problem": "sum_squares",
            "executor": {"kind": "ray", "address": "head:6379"},
        }
    )
    assert config.executor.options() == {"address": "head:6379"}
    assert config.to_toml_dict()["executor"] == {"kind": "ray", "address": "head:6379"}


def test_addresses_and_what_a_node_holds() -> None:
    assert split_address("ray://head.example:10001") == ("head.example", 10001)
    assert split_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert split_address("[::1]:6379") == ("::1", 6379)
    for bad in ("head", "head:port", ":6379", "head:0", "head:70000"):
        assert split_address(bad) is None, bad
    node = {"CPU": 4.0, "memory": 8 * 2**30, "neuron_cores": 2.0}
    assert fits(node, Resources(cpus=1, memory_mb=1024)) == 4
    assert fits(node, Resources(cpus=1, memory_mb=4096)) == 2
    assert fits(node, Resources(cpus=1, custom={"neuron_cores": 1})) == 2
    assert fits(node, Resources(cpus=1, gpus=1)) == 0


@pytest.mark.asyncio
async def test_every_evaluation_goes_through_the_executor_a_plugin_registers(llm_server, tmp_path):
    """A third-party executor, chosen in the config, receives every evaluation the search
    makes; what it says about where each ran is journaled with the result."""
    log = tmp_path / "evaluations.log"
    config = toy_config(llm_server, tmp_path, iterations=1)
    config.update(
        plugins=["recording_executor_plugin"], executor={"kind": "recording", "log_file": str(log)}
    )
    summary = await optimize_async(config)
    recorded = log.read_text().splitlines()
    store = RunStore(summary.run_dir)
    try:
        journaled = store.evaluations()
    finally:
        store.close()
    assert len(recorded) == summary.data["evaluations"] == len(journaled) > 3
    assert all(line.startswith("sum_squares ") for line in recorded)
    assert all(
        result["placement"]
        == {"executor": "local", "host": result["placement"]["host"], "recorded": True}
        for result, _ in journaled.values()
    )


@pytest.mark.asyncio
async def test_evaluations_lost_with_their_machine_are_journaled_counted_and_shown(
    llm_server, tmp_path
):
    """An executor that loses some evaluations with their machine: each attempt lost is
    journaled with where and why, each infra error with its result; summary.json, the
    report and the journal count the same evaluations, and the report shows the reason."""
    log = tmp_path / "evaluations.log"
    config = toy_config(llm_server, tmp_path, iterations=1)
    config.update(
        plugins=["recording_executor_plugin"],
        executor={"kind": "recording", "log_file": str(log), "lose_when": "x * x"},
    )
    summary = await optimize_async(config)
    store = RunStore(summary.run_dir)
    try:
        results = store.evaluations()
        lost = store.events(ATTEMPT_LOST)
        infra = store.infra_errors()
        infra_events = len(store.events(INFRA_ERROR))
        keys = {c.eval_key: c.code for c in store.candidates() if c.eval_key}
    finally:
        store.close()
    recorded = log.read_text().splitlines()
    assert infra and results  # some lost, some not
    assert len(recorded) == len(results) + infra_events == summary.data["evaluations"]
    report = run_data(summary.run_dir)
    assert report["summary"]["evaluations"] == summary.data["evaluations"]
    # one evaluation per infra error: a program lost twice (two candidates) is two
    assert report["summary"]["infra_errors"] == summary.data["evaluations_infra_error"]
    assert summary.data["evaluations_infra_error"] == infra_events == len(lost) >= len(infra)
    assert summary.data["evaluation_attempts_lost"] == len(lost)
    for key, result in infra.items():
        assert "x * x" in keys[key] and key not in results
        assert result["failure"] == "infra_error" and result["placement"]["lost"][0]["attempt"] == 1
    assert {e["key"] for e in lost} == set(infra)
    assert all(e["node_ip"] == "10.0.0.9" and e["reason"] == "node died" for e in lost)
    shown = [n for n in report["candidates"] if n["failure"] == "infra_error"]
    assert len(shown) >= len(infra)
    assert all(n["eval"]["feedback"].endswith("10.0.0.9: node died") for n in shown)
    assert not [n for n in report["candidates"] if n["failure"] == "failed"]
    index = json.loads((summary.run_dir / "candidates" / "iter-1" / "index.json").read_text())
    assert {c["failure"] for c in index if c["id"] in {n["id"] for n in shown}} == {"infra_error"}


def test_how_long_to_wait_for_a_node_is_checked() -> None:
    specs = build_registry().executors()
    assert RayOptions().no_nodes_timeout_s == 600
    for bad in (-1, "soon", 10**9):
        with pytest.raises(ConfigError, match=r"executor\.no_nodes_timeout_s"):
            create_executor(ExecutorConfig(kind="ray", no_nodes_timeout_s=bad), specs)
    with pytest.raises(ConfigError, match=r"executor\.no_nodes_timeout_s: unknown key"):
        create_executor(ExecutorConfig(kind="local", no_nodes_timeout_s=5), specs)
    ray = create_executor(ExecutorConfig(kind="ray", no_nodes_timeout_s=30), specs)
    assert isinstance(ray, RayExecutor) and ray.options.no_nodes_timeout_s == 30


def test_a_wait_for_a_node_is_shown_at_once_and_stops_the_run_at_the_timeout(tmp_path):
    """The ``ray`` executor's wait for a node (no cluster needed: the bookkeeping alone):
    the progress panel says so with the time waited as soon as an evaluation finds no
    live node for its slot; a node back ends the wait; past ``no_nodes_timeout_s`` the
    evaluation raises ``NoNodes``, which stops the run with a reason and a one-line
    detail. The cluster itself: ``tests/scaleout/test_ray_nodes_lost.py``."""
    ray = RayExecutor(RayOptions(no_nodes_timeout_s=0.3))
    ledger = Ledger()
    budget = Budget(BudgetConfig(), ledger)
    store = RunStore(tmp_path)
    backend = make_backend("toy")
    evaluator = Evaluator(
        backend,
        backend.load_problem("sum_squares"),
        store,
        ledger,
        budget,
        slots=1,
        timeout_s=30,
        seed=1,
        want_feedback=False,
        executor=ray,
    )
    progress = Progress(ledger=ledger)
    progress.watch(JournaledLLM(None, store, ledger, budget), evaluator)

    def panel() -> str:
        console = Console(width=120, height=60, record=True, file=io.StringIO())
        console.print(progress.__rich__())
        return console.export_text()

    needs = Resources(cpus=1, custom={"lane": 1})
    assert evaluator.stalled is None and "waiting" not in panel()
    ray.note_no_nodes(needs)
    (row,) = [line for line in panel().splitlines() if line.startswith("│ waiting ")]
    assert row.split(None, 2)[2].startswith(
        "no live node can hold an evaluation slot: waiting 0 s (the run stops at 0.3 s)"
    )
    ray.note_nodes_back()
    assert evaluator.stalled is None
    ray.note_no_nodes(needs)  # the wait starts again
    time.sleep(0.35)
    with pytest.raises(NoNodes) as stop:
        ray.note_no_nodes(needs)
    assert isinstance(stop.value, RunStopped) and stop.value.reason == NO_NODES_REASON
    assert stop.value.detail == (
        "no live node of the Ray cluster could hold an evaluation slot for 0 s "
        "(executor.no_nodes_timeout_s = 0.3)"
    )
    store.close()


def cli_run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, **kwargs)


@pytest.mark.parametrize("address", ["127.0.0.1:9", "ray://127.0.0.1:9"])
def test_an_unreachable_cluster_is_one_line_before_anything_is_spent(
    thread_server, tmp_path, address
):
    config = toy_config(thread_server, tmp_path)
    config["executor"] = {"kind": "ray", "address": address}
    path = tmp_path / "run.toml"
    path.write_text(tomli_w.dumps(config))
    before = thread_server.request_count
    out = cli_run(["optimize", str(path), "--quiet"])
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == [
        f"error: executor.address: no Ray cluster answers at {address} (Connection refused)"
    ]
    assert thread_server.request_count == before
    assert not Path(config["run_dir"]).exists()


def test_executor_flag_and_resume_may_move_a_run_to_another_executor(thread_server, tmp_path):
    config = toy_config(thread_server, tmp_path, iterations=1)
    path = tmp_path / "run.toml"
    path.write_text(tomli_w.dumps(config))
    out = cli_run(["optimize", str(path), "--quiet", "--executor", "nowhere"])
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "error: executor.kind: unknown executor 'nowhere' (installed: local, ray)"
    )
    assert cli_run(["optimize", str(path), "--quiet", "--executor", "local"]).returncode == 0
    moved = cli_run(
        [
            "resume",
            config["run_dir"],
            "--quiet",
            "--json",
            "--set",
            "executor.kind=ray",
            "--set",
            "executor.address=127.0.0.1:9",
        ]
    )
    assert moved.returncode == 2 and "no Ray cluster answers" in moved.stderr
    again = cli_run(["resume", config["run_dir"], "--quiet", "--json"])
    assert again.returncode == 0 and json.loads(again.stdout)["stop_reason"] == "completed"
