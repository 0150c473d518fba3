"""Exports after every iteration: ``best<ext>``, ``summary.json`` and the iteration's
candidates appear while the run goes on, always whole, and survive the run being killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tomli_w
from report_helpers import toy_run_config

from autocomp_core.ledger.store import RunStore
from autocomp_core.run import exports
from autocomp_core.run.exports import atomic_write
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
#: for a run the test SIGKILLs: the killed process must be the command itself
PLAIN_CLI = [sys.executable, "-m", "autocomp_core.cli"]


def test_exports_follow_each_iteration_and_survive_a_kill(tmp_path, slow_server):
    run_dir = tmp_path / "run"
    config = tmp_path / "run.toml"
    config.write_text(tomli_w.dumps(toy_run_config(slow_server, run_dir, iterations=4)))
    proc = subprocess.Popen(
        [*PLAIN_CLI, "optimize", str(config), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen: list[int] = []  # iterations_completed in each summary.json read while running
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            summary_file = run_dir / "summary.json"
            if summary_file.exists():
                summary = json.loads(summary_file.read_text())  # never half a file
                assert summary["status"] == "running" and summary["stop_reason"] is None
                done = summary["iterations_completed"]
                if not seen or seen[-1] != done:
                    seen.append(done)
                    best = (run_dir / "best.py").read_text()
                    index = json.loads(
                        (run_dir / "candidates" / f"iter-{done}" / "index.json").read_text()
                    )
                    assert index and all(
                        (run_dir / "candidates" / f"iter-{done}" / f"{c['id']}.py").exists()
                        for c in index
                        if c["failure"] != "no_program"
                    )
                if done >= 2:
                    proc.send_signal(signal.SIGKILL)  # the machine dies mid-run
                    break
            time.sleep(0.05)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert seen[:2] == [1, 2], seen  # written at the end of iterations 1 and 2

    # what the dead run left is whole and agrees with its journal
    summary = json.loads((run_dir / "summary.json").read_text())
    store = RunStore(run_dir)
    try:
        assert summary["iterations_completed"] >= 2
        best = store.candidate(summary["best_candidate"])
        assert (run_dir / "best.py").read_text() == best.code
        assert best.iteration <= summary["iterations_completed"]
        for i in (0, 1, 2):
            index = json.loads((run_dir / "candidates" / f"iter-{i}" / "index.json").read_text())
            assert [c["id"] for c in index] == sorted(c.id for c in store.candidates(i))
            assert {c["id"] for c in index if c["in_beam"]} == set(store.beam(i)) & {
                c["id"] for c in index
            }
    finally:
        store.close()


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    atomic_write(target, "old")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exports.os, "fsync", disk_full)
    with pytest.raises(OSError):
        atomic_write(target, "new, half written")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    monkeypatch.undo()
    atomic_write(target, "new")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["summary.json"]


@pytest.mark.parametrize("best,flagged", [(5.0, True), (20.0, False)])
def test_a_best_result_below_the_lower_bound_is_flagged_as_suspect(tmp_path, best, flagged):
    """The toy backend's lower bound is 12 lines; a journal whose best program claims fewer
    (a backend that mismeasured) is reported as impossible, in the summary, in report.md
    and in the HTML report's data."""
    from toy_plugin import ToyBackend

    from autocomp_core.contract.backend import EvalResult
    from autocomp_core.ledger.accounting import Ledger
    from autocomp_core.ledger.store import Candidate, Origin
    from autocomp_core.report.data import run_data
    from autocomp_core.run.exports import target_info, write_exports

    backend = ToyBackend()
    problem = backend.load_problem("sum_squares")
    assert backend.metric_lower_bound(problem) == 12.0
    store = RunStore(tmp_path)
    store.set_meta("target", target_info(backend, problem))
    for cid, score, parents in (("root", 100.0, []), ("i1-b0-p0-c0", best, ["root"])):
        store.save_evaluation(cid, EvalResult(True, metric=score, unit="lines").to_dict())
        store.save_candidate(
            Candidate(
                id=cid,
                iteration=len(parents),
                parents=parents,
                origin=Origin.PLAN if parents else Origin.ROOT,
                code=f"# {cid}\n",
                score=score,
                eval_key=cid,
            )
        )
    store.save_beam(0, ["root"], {"best": 100.0})
    store.save_beam(1, ["i1-b0-p0-c0"], {"best": best})
    store.event("session_end", stop_reason="completed")
    summary = write_exports(tmp_path, store, backend, problem, Ledger(), stop_reason="completed")
    store.close()
    assert summary["impossible_result"] is flagged
    warning = "WARNING: the best result beats the lower bound"
    assert (warning in (tmp_path / "report.md").read_text()) is flagged
    assert run_data(tmp_path)["summary"]["impossible"] is flagged
