"""The ``ray`` executor when every worker node of the cluster dies (``kill -9`` of their
raylets, as a user kills them): the evaluation lost with its node is journaled with the
node, the attempt and the reason, the run waits for a node saying so, stops cleanly after
``[executor] no_nodes_timeout_s`` with a one-line reason, and ``resume`` finishes it once
a node has joined. Summary, report and journal count the same evaluations throughout.

One cluster for the module (``conftest.cluster``: a head with a CPU and no ``lane``, and
node ``b`` with one ``lane``); the test adds the nodes it kills and the one it resumes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w

from autocomp_core import make_backend
from autocomp_core.ledger.store import ATTEMPT_LOST, INFRA_ERROR, RunStore
from autocomp_core.report.data import run_data
from autocomp_core.testing.preloaded_cli import preloaded_cli

pytestmark = pytest.mark.slow

CLI = preloaded_cli()
NO_NODES_TIMEOUT_S = 5
sys.path.insert(0, str(Path(__file__).parent.parent / "sample_plugins"))
from placed_plugin import code_digest  # noqa: E402


def evaluations_logged(log: Path) -> list[tuple[str, str]]:
    """(node, program digest) of every evaluation a node started, in order."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(words[0], words[3]) for words in map(str.split, lines) if words[2] == "eval"]


def counts_agree(run_dir: Path) -> dict:
    """summary.json, the report's data and the journal count the same evaluations; the
    summary."""
    summary = json.loads((run_dir / "summary.json").read_text())
    store = RunStore(run_dir)
    try:
        results = store.count("evaluations")
        infra = len(store.events(INFRA_ERROR))
        lost = len(store.events(ATTEMPT_LOST))
    finally:
        store.close()
    report = run_data(run_dir)["summary"]
    assert summary["evaluations"] == results + infra == report["evaluations"], (
        summary["evaluations"],
        results,
        infra,
        report["evaluations"],
    )
    assert summary["evaluations_infra_error"] == infra == report["infra_errors"]
    assert summary["evaluation_attempts_lost"] == lost
    assert f"- evaluations: {summary['evaluations']} (" in (run_dir / "report.md").read_text()
    return summary


def test_every_node_lost_stops_the_run_after_the_wait_and_resume_finishes_it(
    cluster, llm, tmp_path
):
    cluster.add_node("c", num_cpus=1, resources={"lane": 1.0}, env={"AUTOCOMP_TEST_NODE": "c"})
    run_dir, log = tmp_path / "run", tmp_path / "evals.log"
    config = tmp_path / "run.toml"
    config.write_text(
        tomli_w.dumps(
            {
                "backend": "toyplaced",
                "problem": "sum_squares",
                "seed": 5,
                "run_dir": str(run_dir),
                "plugins": ["placed_plugin"],
                # one lane per evaluation: only b and c hold one; a program (not the
                # baseline) stalls on c until c dies
                "backend_options": {
                    "log_file": str(log),
                    "resource": "lane",
                    "stall_on": "c",
                    "stall_baseline": False,
                    "delay_s": 0.2,
                },
                "models": {"plan": [f"openai-compatible@{llm.openai_base_url}::scripted"]},
                # two iterations: the second has evaluations to wait for, whatever the first
                # did before the nodes died
                "search": {
                    "iterations": 2,
                    "beam_size": 2,
                    "plans_per_candidate": 2,
                    "codes_per_plan": 1,
                },
                "executor": {
                    "kind": "ray",
                    "address": cluster.address,
                    "max_retries": 0,  # the evaluation lost with c ends as an infra error
                    "no_nodes_timeout_s": NO_NODES_TIMEOUT_S,
                },
                "llm": {"max_concurrency": 2, "max_retries": 1, "timeout_s": 30},
            }
        )
    )
    env = {**os.environ, **cluster.driver_env()}
    baseline = code_digest(
        make_backend("toyplaced", plugins=("placed_plugin",))
        .load_problem("sum_squares")
        .baseline_code
    )

    def stalled_on_c() -> list[str]:
        return [d for node, d in evaluations_logged(log) if node == "c" and d != baseline]

    engine = subprocess.Popen(
        [*CLI, "optimize", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not stalled_on_c():
            assert engine.poll() is None and time.monotonic() < deadline, engine.communicate()
            time.sleep(0.02)
        for node in ("b", "c"):  # every node with a lane
            cluster.kill_raylet(node)
        out, err = engine.communicate(timeout=300)
    finally:
        engine.kill()
    assert engine.returncode == 0, err

    # stopped cleanly, saying why in one line, and how to go on
    lines = out.splitlines()
    assert lines[0].startswith("stop reason: executor.no_nodes_timeout_s; "), out
    assert lines[1].startswith(
        "stopped: no live node of the Ray cluster could hold an evaluation slot for "
    ), out
    assert lines[1].endswith(
        f"(executor.no_nodes_timeout_s = {NO_NODES_TIMEOUT_S}); continue with: "
        f"autocomp-core resume {run_dir}"
    ), out
    # the log said so as soon as no node could hold a slot, before the run stopped
    waiting = err.index("no live node of the Ray cluster can hold an evaluation slot")
    assert waiting < err.index("run stopped"), err
    assert "stops_after_s=5" in err[waiting : waiting + 300]

    # the evaluation stalled on c: lost with c on its one attempt, journaled as such
    summary = counts_agree(run_dir)
    assert summary["stop_reason"] == "executor.no_nodes_timeout_s"
    assert summary["stop_detail"] in lines[1]
    (stalled,) = stalled_on_c()
    store = RunStore(run_dir)
    try:
        keys = {  # the candidates evaluated (another with the same program may wait)
            c.eval_key
            for c in store.candidates()
            if c.code and c.eval_key and code_digest(c.code) == stalled
        }
        losses = [e for e in store.events(ATTEMPT_LOST) if e["key"] in keys]
        infra = store.infra_errors()
        unfinished = [c.id for c in store.candidates() if c.code and not c.eval_key]
    finally:
        store.close()
    assert len(keys) == 1 and len(losses) == 1, losses
    (key,) = keys
    assert losses[0]["attempt"] == 1 and losses[0]["node_ip"] == cluster.ip(2)
    assert losses[0]["node_id"] and losses[0]["reason"]
    assert infra[key]["failure"] == "infra_error"
    assert infra[key]["placement"]["lost"] == [
        {k: losses[0][k] for k in ("attempt", "node_id", "node_ip", "reason")}
    ]
    # the report shows it as an infra error, with the node and the reason
    shown = [
        n["eval"]["feedback"]
        for n in run_data(run_dir)["candidates"]
        if n["failure"] == "infra_error" and cluster.ip(2) in n["eval"]["feedback"]
    ]
    assert len(shown) == 1 and losses[0]["reason"] in shown[0], shown
    assert unfinished  # the second iteration waited for evaluations that never ran

    # a node joins; the run resumes against the cluster and finishes
    cluster.add_node("d", num_cpus=1, resources={"lane": 1.0}, env={"AUTOCOMP_TEST_NODE": "d"})
    before = len(evaluations_logged(log))
    resumed = subprocess.run(
        [*CLI, "resume", str(run_dir), "--quiet", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["stop_reason"] == "completed"
    after = counts_agree(run_dir)
    assert after["stop_detail"] is None
    assert after["evaluations"] > summary["evaluations"]
    assert {node for node, _ in evaluations_logged(log)[before:]} == {"d"}
