"""The ``ray`` executor on a real cluster of this machine: placement by resource, a node
killed mid-evaluation, the engine killed and resumed, and a suite over the cluster.

The engine runs as the CLI in a subprocess (a driver of the cluster), as a user runs it.
Evaluations are logged by the ``toyplaced`` backend on the node that runs them
(``tests/sample_plugins/placed_plugin.py``) and journaled by the engine with where they ran.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from autocomp_core.ledger.store import RunStore
from autocomp_core.suite import SUMMARY_JSON
from autocomp_core.testing.preloaded_cli import preloaded_cli

pytestmark = pytest.mark.slow

CLI = preloaded_cli()
#: for a run the test SIGKILLs: the killed process must be the command itself
PLAIN_CLI = [sys.executable, "-m", "autocomp_core.cli"]
sys.path.insert(0, str(Path(__file__).parent.parent / "sample_plugins"))
from placed_plugin import code_digest  # noqa: E402


def engine_env(cluster) -> dict[str, str]:
    return {**os.environ, **cluster.driver_env()}


def cli(cluster, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], env=engine_env(cluster), capture_output=True, text=True, timeout=timeout
    )


def run_config(
    cluster, llm, tmp: Path, name: str, address: str | None = None, **options: Any
) -> tuple[Path, dict]:
    """A small toyplaced run on the cluster; ``options`` go to the backend."""
    config = {
        "backend": "toyplaced",
        "problem": "sum_squares",
        "seed": 5,
        "run_dir": str(tmp / f"{name}-run"),
        "plugins": ["placed_plugin"],
        "backend_options": {"log_file": str(tmp / f"{name}.log"), **options},
        "models": {"plan": [f"openai-compatible@{llm.openai_base_url}::scripted"]},
        # held_out off: its second evaluation of a program would count as a repeat here
        "search": {
            "iterations": 2,
            "beam_size": 2,
            "plans_per_candidate": 2,
            "codes_per_plan": 2,
            "held_out": False,
        },
        "executor": {"kind": "ray", "address": address or cluster.address},
        "llm": {"max_concurrency": 2, "max_retries": 1, "timeout_s": 30},
        "playbook": {
            "enabled": False
        },  # runs compared with each other must not learn from each other
    }
    path = tmp / f"{name}.toml"
    path.write_text(tomli_w.dumps(config))
    return path, config


def evaluations_logged(log: Path) -> list[tuple[str, str]]:
    """(node, program digest) of every evaluation started, in order."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(words[0], words[3]) for words in map(str.split, lines) if words[2] == "eval"]


def wait_for(condition, engine: subprocess.Popen, what: str, timeout_s: float = 300) -> None:
    """Poll ``condition`` while the engine runs; a timeout or an engine that exits first
    fails the test with the engine's stderr, and leaves no engine behind."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if engine.poll() is not None or time.monotonic() > deadline:
            engine.kill()
            _, err = engine.communicate()
            pytest.fail(f"waiting for {what}: engine exited {engine.returncode}: {err}")
        time.sleep(0.02)


def journal(run_dir: Path) -> tuple[list, dict]:
    store = RunStore(run_dir)
    try:
        return store.candidates(), {k: r for k, (r, _) in store.evaluations().items()}
    finally:
        store.close()


@pytest.fixture(scope="module")
def nodes(cluster) -> dict[str, dict]:
    """The cluster's nodes as ``doctor --executor ray`` shows them, by their loopback
    address."""
    out = cli(cluster, "doctor", "--executor", "ray", "--address", cluster.address, "--json")
    assert out.returncode == 0, out.stderr
    return {node["address"]: node for node in json.loads(out.stdout)["nodes"]}


def test_doctor_shows_nodes_their_resources_and_backends(cluster, nodes):
    head, b = nodes[cluster.ip(0)], nodes[cluster.ip(1)]
    assert head["resources"]["CPU"] == 1 and "lane" not in head["resources"]
    assert b["resources"]["lane"] == 1 and b["resources"]["node_b"] == 1
    for node in (head, b):
        assert node["backends"]["toy"] == "toy_plugin"
        assert node["backends"]["gemmini"].startswith("autocomp-gemmini ")
    text = cli(cluster, "doctor", "toy", "--executor", "ray", "--address", cluster.address)
    assert text.returncode == 0, text.stderr
    assert f"{cluster.ip(1)}: " in text.stdout and "lane 1" in text.stdout
    assert "backends: " in text.stdout and "toy (toy_plugin)" in text.stdout


def test_slots_are_what_the_live_nodes_hold(cluster, monkeypatch):
    """Evaluations at once come from the cluster's resources, not this machine's CPUs."""
    import anyio

    from autocomp_core.contract.resources import Resources
    from autocomp_core.executors.ray_executor import RayExecutor, RayOptions

    for key, value in cluster.driver_env().items():
        monkeypatch.setenv(key, value)

    async def slots() -> list[int]:
        async with RayExecutor(RayOptions(address=cluster.address)) as executor:
            counts = [
                executor.slots(Resources(cpus=1, memory_mb=512)),
                executor.slots(Resources(cpus=0.5, memory_mb=512)),
                executor.slots(Resources(cpus=1, custom={"lane": 1})),
            ]
            with pytest.raises(ValueError, match="needs 1 cpus, 1024 memory_mb, 1 gpus"):
                executor.slots(Resources(cpus=1, gpus=1))
            return counts

    assert anyio.run(slots) == [2, 4, 1]  # a CPU on each node; half CPUs; lane on b only


def test_slots_open_the_backend_before_the_first_evaluation_and_close_it_on_leaving(
    cluster, tmp_path, monkeypatch
):
    """The executor starts its evaluation slots when the run knows its backend: the
    backend is open on the nodes before an evaluation is asked, evaluations run in those
    processes, an evaluation the engine cancels is cancelled there (and the slot serves
    the next one), and leaving closes the backend. A node without the backend's plugin
    makes each evaluation an infra error that says so, not a retry."""
    import anyio

    from autocomp_core import EvalContext, make_backend
    from autocomp_core.executors import EvalRequest
    from autocomp_core.executors.ray_executor import RayExecutor, RayOptions

    for key, value in cluster.driver_env().items():
        monkeypatch.setenv(key, value)
    log = tmp_path / "slots.log"

    def logged(what: str) -> list[tuple[str, str]]:  # (node, process) per line
        lines = log.read_text().splitlines() if log.exists() else []
        return [(w[0], w[1]) for w in map(str.split, lines) if w[2] == what]

    async def until(condition) -> None:
        with anyio.fail_after(120):
            while not condition():
                await anyio.sleep(0.05)

    def request(**options) -> EvalRequest:
        options["log_file"] = str(log)
        backend = make_backend("toyplaced", options=options, plugins=("placed_plugin",))
        problem = backend.load_problem("sum_squares")
        return EvalRequest(backend, problem, problem.baseline_code, EvalContext(timeout_s=60))

    async def evaluate(plugins: tuple[str, ...], prepare: bool) -> list:
        ask = request()
        async with RayExecutor(RayOptions(address=cluster.address), plugins) as executor:
            if prepare:
                await executor.prepare(ask.backend, 2)
                await until(lambda: len(logged("open")) == 2)
                assert not logged("eval")
            return [await executor.evaluate(ask) for _ in range(3)]

    results = anyio.run(evaluate, ("placed_plugin",), True)
    assert all(r.correct and r.placement["attempts"] == 1 for r in results)
    opened = set(logged("open"))
    assert {node for node, _ in opened} == {"head", "b"}  # a slot on each node
    assert set(logged("eval")) <= opened and set(logged("close")) == opened

    async def cancel_twice() -> None:
        stalling = request(resource="node_b", stall_on="b")  # one slot, on b, that stalls
        async with RayExecutor(RayOptions(address=cluster.address), ("placed_plugin",)) as ex:
            for n in (1, 2):  # the second starts there only once the first is over
                async with anyio.create_task_group() as tg:
                    tg.start_soon(ex.evaluate, stalling)
                    await until(lambda n=n: len(logged("eval")) == 3 + n)
                    tg.cancel_scope.cancel()
                await until(lambda n=n: len(logged("cancelled")) == n)

    anyio.run(cancel_twice)
    stalled = logged("eval")[3:]
    assert logged("cancelled") == stalled and len(set(stalled)) == 1 and stalled[0][0] == "b"

    lacking = anyio.run(evaluate, (), False)  # the nodes cannot import placed_plugin
    for result in lacking:
        assert result.failure.value == "infra_error" and result.placement["attempts"] == 1
        assert "backend: unknown backend 'toyplaced' (installed: " in result.feedback
        assert "gemmini" in result.feedback  # every installed plugin named, not just one
        assert result.feedback.startswith(f"node {result.placement['node_ip']}: ")


def test_evaluations_land_on_the_node_that_has_their_resource(cluster, llm, nodes, tmp_path):
    """Through the Ray Client (``ray://``), as from a machine outside the cluster."""
    config, data = run_config(
        cluster, llm, tmp_path, "placed", cluster.client_address, resource="node_b"
    )
    out = cli(cluster, "optimize", str(config), "--quiet", "--json")
    assert out.returncode == 0, out.stderr
    _, evals = journal(Path(data["run_dir"]))
    assert len(evals) > 4
    b = nodes[cluster.ip(1)]["node_id"]
    for result in evals.values():  # journaled with where it ran
        where = result["placement"]
        assert (where["executor"], where["node_id"], where["node_ip"], where["attempts"]) == (
            "ray",
            b,
            cluster.ip(1),
            1,
        )
    logged = evaluations_logged(Path(data["backend_options"]["log_file"]))
    assert {node for node, _ in logged} == {"b"} and len(logged) == len(evals)
    # the backend was opened on the node once per worker process, not per evaluation
    opened = [
        line
        for line in Path(data["backend_options"]["log_file"]).read_text().splitlines()
        if line.split()[2] == "open"
    ]
    assert 1 <= len(opened) < len(evals)


def test_a_resource_no_node_offers_is_refused_before_anything_is_spent(cluster, llm, tmp_path):
    config, data = run_config(cluster, llm, tmp_path, "nowhere", resource="neuron_cores")
    before = llm.request_count
    out = cli(cluster, "optimize", str(config), "--quiet")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: backend toyplaced: no node of the Ray cluster can run one evaluation: it "
        "needs 1 cpus, 512 memory_mb, 1 neuron_cores; the 2 nodes offer CPU, lane, memory, "
        "node_b, object_store_memory"
    ]
    assert llm.request_count == before and not Path(data["run_dir"]).exists()


def test_a_node_killed_mid_evaluation_costs_a_retry_not_the_run(cluster, llm, nodes, tmp_path):
    cluster.add_node("c", num_cpus=1, resources={"lane": 1.0}, env={"AUTOCOMP_TEST_NODE": "c"})
    # two evaluations at once (each holds the node's one lane for 1.5 s) need both b and c
    config, data = run_config(
        cluster, llm, tmp_path, "killed", resource="lane", delay_s=1.5, stall_on="c"
    )
    log = Path(data["backend_options"]["log_file"])
    engine = subprocess.Popen(
        [*PLAIN_CLI, "optimize", str(config), "--quiet", "--json"],
        env=engine_env(cluster),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: any(node == "c" for node, _ in evaluations_logged(log)),
            engine,
            "an evaluation on node c",
        )
        cluster.kill_node("c")  # while its evaluation stalls: mid-way
        out, err = engine.communicate(timeout=300)
    finally:
        engine.kill()
    assert engine.returncode == 0, err
    assert json.loads(out)["stop_reason"] == "completed"
    logged = evaluations_logged(log)
    on_c = [digest for node, digest in logged if node == "c"]
    assert len(on_c) == 1  # c died during its first evaluation
    assert [node for node, digest in logged if digest == on_c[0]] == ["c", "b"]  # ran again on b
    cands, evals = journal(Path(data["run_dir"]))
    keys = {c.eval_key for c in cands if c.code is not None and code_digest(c.code) == on_c[0]}
    assert len(keys) == 1  # journaled once
    where = evals[keys.pop()]["placement"]
    assert where["attempts"] == 2 and where["node_ip"] == cluster.ip(1)
    assert len(where["lost"]) == 1
    assert all(r["failure"] != "infra_error" for r in evals.values())
    assert Counter(node for node, _ in logged)["c"] == 1


def test_the_engine_killed_and_resumed_repeats_no_finished_evaluation(cluster, llm, tmp_path):
    reference_config, reference = run_config(cluster, llm, tmp_path, "reference")
    started = time.monotonic()
    assert cli(cluster, "optimize", str(reference_config), "--quiet").returncode == 0
    seconds = time.monotonic() - started
    expected = evaluations_logged(Path(reference["backend_options"]["log_file"]))
    slots = 2  # a CPU on the head and one on node b
    rng = random.Random(14)
    for trial in range(2):
        config, data = run_config(cluster, llm, tmp_path, f"killed-{trial}")
        engine = subprocess.Popen(
            [*PLAIN_CLI, "optimize", str(config), "--quiet"],
            env=engine_env(cluster),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        log = Path(data["backend_options"]["log_file"])
        # the run evaluates on the cluster: the driver is connected
        wait_for(lambda log=log: evaluations_logged(log), engine, "a first evaluation")
        time.sleep(rng.uniform(0.0, seconds * 0.5))
        engine.send_signal(signal.SIGKILL)
        engine.wait()
        resumed = cli(cluster, "resume", data["run_dir"], "--quiet", "--json")
        assert resumed.returncode == 0, resumed.stderr
        logged = [digest for _, digest in evaluations_logged(log)]
        repeated = sum(n - 1 for n in Counter(logged).values())
        assert repeated <= slots, (trial, repeated)  # only what was in flight at the kill
        assert sorted(set(logged)) == sorted({digest for _, digest in expected}), trial
        ref_cands, _ = journal(Path(reference["run_dir"]))
        cands, _ = journal(Path(data["run_dir"]))
        assert sorted((c.id, c.score) for c in cands) == sorted(
            (c.id, c.score) for c in ref_cands
        ), trial


def test_a_suite_on_the_cluster_completes_resumes_after_sigkill_and_summarizes(
    cluster, llm, tmp_path
):
    suite = tmp_path / "suite"
    log = tmp_path / "suite.log"
    args = [
        "optimize-suite",
        "--all",
        "--backend",
        "toyplaced",
        "--suite-dir",
        str(suite),
        "--model",
        f"openai-compatible@{llm.openai_base_url}::scripted",
        "--iterations",
        "1",
        "--beam-size",
        "1",
        "--plans",
        "2",
        "--codes",
        "1",
        "--executor",
        "ray",
        "--set",
        f"executor.address={cluster.address!r}",
        "--set",
        "plugins=['placed_plugin']",
        "--set",
        f"backend_options.log_file={str(log)!r}",
        "--set",
        "backend_options.delay_s=0.3",
        "--concurrency",
        "2",
        "--quiet",
    ]
    engine = subprocess.Popen(
        [*PLAIN_CLI, *args],
        env=engine_env(cluster),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: len(evaluations_logged(log)) >= 3, engine, "some problems under way")
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    assert not (suite / SUMMARY_JSON).exists()
    resumed = cli(cluster, "resume", str(suite), "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    rows = {row["problem"]: row for row in summary["per_problem"]}
    assert sorted(rows) == ["count_negatives", "count_pairs", "prefix_max", "sum_squares"]
    assert summary["stop_reason"] == "completed" and summary["problems"] == 4
    assert all(r["stop_reason"] == "completed" and r["speedup"] for r in rows.values())
    assert rows["sum_squares"]["speedup"] > 1 and rows["sum_squares"]["correct"]
    assert summary["fast_p"]["1"] == 0.25  # the scripted LLM only speeds up sum_squares
    assert (suite / "summary.md").read_text().count("| completed |") == 4
    for problem in rows:  # every evaluation of every run ran on the cluster
        _, evals = journal(suite / problem)
        assert {r["placement"]["executor"] for r in evals.values()} == {"ray"}
