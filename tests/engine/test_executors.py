"""Executors without a cluster: the built-in ``local``, one a plugin registers, the checks
of ``[executor]``, and a cluster address that does not answer (the Ray cluster itself is
in ``tests/scaleout``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import tomli_w
from engine_helpers import toy_config

from autocomp_core import ConfigError, EvalContext, make_backend
from autocomp_core.api import optimize_async
from autocomp_core.config import ExecutorConfig, validate
from autocomp_core.executors import EvalRequest, Executor, create_executor
from autocomp_core.executors.local import LocalExecutor
from autocomp_core.executors.ray_executor import RayExecutor, RayOptions, fits, split_address
from autocomp_core.plugins import build_registry
from autocomp_core.resources import Resources
from autocomp_core.store import RunStore
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
