"""Crash safety: SIGKILL a run in each of its phases, resume it, and count what reached the
LLM server and the evaluator against an uninterrupted run. Replay reaches the same beam."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import tomli_w
from scripted_llm import reply

from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

HERE = Path(__file__).parent
CLI = preloaded_cli()
#: for a run the test SIGKILLs: the killed process must be the command itself
PLAIN_CLI = [sys.executable, "-m", "autocomp_core.cli"]
CONCURRENCY = 3  # LLM calls in flight at most; bounds what a kill can lose
EVAL_SLOTS = 2


# Engines killed mid-evaluation cannot remove their sandboxes' work dirs: they go here.
ENGINE_TMP = Path(tempfile.gettempdir()) / f"autocomp-test-engines-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def engine_tmp():
    ENGINE_TMP.mkdir(exist_ok=True)
    yield
    shutil.rmtree(ENGINE_TMP, ignore_errors=True)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(HERE), e.get("PYTHONPATH", "")])
    e["AUTOCOMP_PLUGINS"] = "counting_plugin"
    e["TMPDIR"] = str(ENGINE_TMP)
    return e


def write_config(tmp: Path, server: LLMTestServer, name: str) -> tuple[Path, Path, Path]:
    run_dir, counter = tmp / f"{name}-run", tmp / f"{name}-evals.txt"
    cfg = {
        "backend": "toycount",
        "problem": "sum_squares",
        "seed": 3,
        "run_dir": str(run_dir),
        "backend_options": {"count_file": str(counter)},
        "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
        "search": {
            "iterations": 3,
            "beam_size": 2,
            "plans_per_candidate": 2,
            "codes_per_plan": 2,
            "repair_failed": True,
        },
        "evaluation": {"parallelism": EVAL_SLOTS},
        "llm": {"max_concurrency": CONCURRENCY, "max_retries": 1, "timeout_s": 20},
        # the killed run must ask what the reference run asked, not learn from its entry
        "playbook": {"enabled": False},
    }
    path = tmp / f"{name}.toml"
    path.write_text(tomli_w.dumps(cfg))
    return path, run_dir, counter


def final_beam(run_dir: Path) -> list[tuple[str, float]]:
    store = RunStore(run_dir)
    try:
        return [(cid, store.candidate(cid).score) for cid in store.beam(store.last_iteration())]
    finally:
        store.close()


def evaluations(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.fixture(scope="module")
def server():
    rng = random.Random(5)
    s = LLMTestServer(
        lambda req: reply(req.prompt), latency=lambda req: rng.uniform(0.02, 0.08)
    ).start_in_thread()
    yield s
    s.stop_thread()


@pytest.fixture(scope="module")
def reference(server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reference")
    config, run_dir, counter = write_config(tmp, server, "ref")
    before = server.request_count
    subprocess.run([*CLI, "optimize", str(config), "--quiet"], env=env(), check=True)
    return {
        "requests": server.request_count - before,
        "beam": final_beam(run_dir),
        "evaluations": evaluations(counter),
        "run_dir": run_dir,
    }


def journal_counts(run_dir: Path) -> dict[str, int]:
    """What the run's journal holds so far (nothing while its tables are being created)."""
    try:
        db = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return {}
    try:
        counts = dict(db.execute("SELECT phase, COUNT(*) FROM llm_calls GROUP BY phase"))
        counts["evaluations"] = db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        counts["iterations"] = db.execute("SELECT COUNT(*) FROM iterations").fetchone()[0]
        return counts
    except sqlite3.Error:
        return {}
    finally:
        db.close()


# Where a kill lands, by what the journal holds: one point in each phase of a run, each a
# moment when the engine has just written and has more calls and evaluations in flight.
# (Ten kills at random moments cost ten runs and could all land in one phase.)
KILL_POINTS = {
    "planning": lambda j: j.get("plan", 0) >= 1,
    "implementing": lambda j: j.get("code", 0) >= 1,
    "evaluating": lambda j: j.get("evaluations", 0) >= 2,  # the baseline's and a candidate's
    "repairing": lambda j: j.get("repair", 0) >= 1,
    "between iterations": lambda j: j.get("iterations", 0) >= 2,  # the first beam journaled
}


def wait_until(proc: subprocess.Popen, run_dir: Path, point: str) -> None:
    """Return once the running engine's journal shows ``point`` (the run still going)."""
    reached = KILL_POINTS[point]
    deadline = time.monotonic() + 120
    while proc.poll() is None and not reached(journal_counts(run_dir)):
        assert time.monotonic() < deadline, f"the run never reached {point}"
        time.sleep(0.005)
    assert proc.poll() is None, f"the run finished before it reached {point}"


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_in_each_phase_and_resume(server, reference, tmp_path, point):
    config, run_dir, counter = write_config(tmp_path, server, "killed")
    before = server.request_count
    proc = subprocess.Popen(
        [*PLAIN_CLI, "optimize", str(config), "--quiet"],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(proc, run_dir, point)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    at_kill = journal_counts(run_dir)
    # cut short: a finished run holds 4 rows (the baseline's and its 3 iterations')
    assert at_kill.get("iterations", 0) <= 3, at_kill
    resumed = subprocess.run(
        [*CLI, "resume", str(run_dir), "--quiet"], env=env(), capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    requests = server.request_count - before
    # nothing answered and journaled is asked again: only calls in flight at the kill
    assert requests <= reference["requests"] + CONCURRENCY, (at_kill, requests)
    assert evaluations(counter) <= reference["evaluations"] + EVAL_SLOTS + 1, at_kill
    assert final_beam(run_dir) == reference["beam"], at_kill


def test_resume_of_a_finished_run_spends_nothing(server, reference):
    before = server.request_count
    subprocess.run([*CLI, "resume", str(reference["run_dir"]), "--quiet"], env=env(), check=True)
    assert server.request_count == before


@pytest.mark.parametrize("reevaluate", [False, True])
def test_replay_reaches_the_same_beam_without_llm(server, reference, tmp_path, reevaluate):
    """Replay answers from the journal; with --reevaluate it also measures every program
    again, which on a deterministic backend must reach the same beam."""
    before = server.request_count
    into = tmp_path / "replayed"
    extra = ["--reevaluate"] if reevaluate else []
    out = subprocess.run(
        [
            *CLI,
            "replay",
            str(reference["run_dir"]),
            "--into",
            str(into),
            *extra,
            "--quiet",
            "--json",
        ],
        env=env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert server.request_count == before
    assert final_beam(into) == reference["beam"]
    assert json.loads(out.stdout)["llm_calls"] == reference["requests"]


def test_ctrl_c_saves_and_resume_finishes(server, reference, tmp_path):
    config, run_dir, _ = write_config(tmp_path, server, "sigint")
    proc = subprocess.Popen(
        [*CLI, "optimize", str(config)],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(proc, run_dir, "implementing")  # not a sleep: a loaded machine runs slower
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "autocomp-core resume" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted"
    out = subprocess.run(
        [*CLI, "resume", str(run_dir), "--quiet", "--json"],
        env=env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["stop_reason"] == "completed"
    assert final_beam(run_dir) == reference["beam"]


def test_replay_of_an_incomplete_journal_fails_in_one_line(server, reference, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(reference["run_dir"], damaged)
    with sqlite3.connect(damaged / "run.sqlite") as db:
        db.execute("DELETE FROM llm_calls WHERE phase = 'code'")
    before = server.request_count
    out = subprocess.run(
        [*CLI, "replay", str(damaged), "--into", str(tmp_path / "r"), "--quiet"],
        env=env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [lines[-1]] and "has no answer for a code request" in lines[-1]
    assert server.request_count == before
