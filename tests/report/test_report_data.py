"""The report's data, read from real run journals: it agrees with the journal and the
run's own summary, reads a run that is still being written, and never writes to it."""

from __future__ import annotations

import json
import os

import pytest
from report_helpers import snapshot

from autocomp_core.contract.backend import EvalResult
from autocomp_core.ledger.store import Candidate, RunStore
from autocomp_core.report.data import (
    _concurrency,
    _intersect,
    _length,
    _union,
    find_runs,
    run_data,
    run_row,
)


def test_run_data_agrees_with_the_journal_and_the_summary(suite_dir):
    run = suite_dir / "sum_squares"
    data = run_data(run)
    summary = json.loads((run / "summary.json").read_text())
    store = RunStore(run)
    try:
        cands = {c.id: c for c in store.candidates()}
        beams = {cid for i in range(store.last_iteration() + 1) for cid in store.beam(i) or []}
        results = {c.id: store.evaluation(c.eval_key) for c in cands.values() if c.eval_key}
    finally:
        store.close()

    nodes = {n["id"]: n for n in data["candidates"]}
    assert nodes.keys() == cands.keys()
    for cid, node in nodes.items():
        c = cands[cid]
        assert data["codes"][node["code"]] == c.code if c.code is not None else node["code"] is None
        assert node["parents"] == c.parents and node["plan"] == (c.plan or "")
        if cid in beams:
            assert node["status"] == "kept", cid
        elif c.correct:
            assert node["status"] == "pruned", cid
        else:
            assert node["status"] == "failed", cid
            assert node["failure"] == (results[cid]["failure"] if cid in results else "no_program")
        # the audit label: every candidate of a finished toy run is clean or refused
        assert node["label"] == ("clean" if c.correct else "refused"), cid
        if not c.correct:
            assert node["label_why"], cid  # the rule that refused it
    labels = summary["labels"]
    assert labels["clean"] == sum(c.correct for c in cands.values())
    assert labels["refused"] == sum(not c.correct for c in cands.values())
    assert labels["overfit"] == labels["flagged"] == 0 and summary["best_label"] == "clean"
    assert len(data["codes"]) == len({c.code for c in cands.values() if c.code is not None})
    assert {n["status"] for n in nodes.values()} >= {"kept", "pruned", "failed"}

    s = data["summary"]
    assert s["best_id"] == summary["best_candidate"]
    assert s["best_score"] == summary["best_score"] and s["speedup"] == summary["speedup"]
    assert s["lower_bound"] == summary["metric_lower_bound"]
    assert s["llm_calls"] == summary["llm_calls"] and s["tokens"] == summary["tokens"]
    assert data["usage"]["by_phase"].keys() == summary["llm_by_phase"].keys()
    assert data["status"] == {
        **data["status"],
        "state": "completed",
        "iterations_done": 3,
        "iterations_total": 3,
    }
    assert [r["best"] for r in data["iterations"]] == list(summary["beam_history"].values())

    failures = {f["kind"]: f["count"] for f in data["failures"]}
    assert sum(failures.values()) == sum(n["status"] == "failed" for n in nodes.values())
    assert all(
        ex["id"] in nodes and nodes[ex["id"]]["failure"] == f["kind"]
        for f in data["failures"]
        for ex in f["examples"]
    )

    t = data["timeline"]
    assert 0 < t["both_busy_s"] <= min(t["llm_busy_s"], t["evaluation_busy_s"])
    assert t["llm_in_flight"][-1][1] == 0 and t["evaluations_in_flight"][-1][1] == 0
    assert max(level for _, level in t["llm_in_flight"]) >= 2  # calls overlapped
    row = run_row(data)
    assert row["speedup"] == summary["speedup"] and row["state"] == "completed"


def test_finds_the_runs_of_a_suite(suite_dir, tmp_path):
    assert [p.name for p in find_runs(suite_dir)] == ["count_pairs", "prefix_max", "sum_squares"]
    assert find_runs(suite_dir / "prefix_max") == [suite_dir / "prefix_max"]
    assert find_runs(tmp_path) == []


def test_reading_a_finished_run_writes_nothing(run_copy):
    before = snapshot(run_copy)
    run_data(run_copy)
    assert snapshot(run_copy) == before  # not even the -wal/-shm files of a reader


def test_reads_a_run_while_its_writer_goes_on(tmp_path):
    writer = RunStore(tmp_path)
    try:
        writer.event("session_start", pid=os.getpid())
        writer.save_evaluation("k0", EvalResult(True, metric=10.0, unit="lines").to_dict())
        writer.save_candidate(
            Candidate(
                id="root",
                iteration=0,
                parents=[],
                origin="root",
                code="x = 1\n",
                score=10.0,
                eval_key="k0",
            )
        )
        writer.save_beam(0, ["root"], {"best": 10.0})
        assert run_data(tmp_path)["status"]["state"] == "running"
        reader = RunStore(tmp_path, readonly=True)
        try:
            with reader.reading():  # a reader in the middle of its snapshot...
                first = reader.candidates()
                writer.save_candidate(
                    Candidate(
                        id="i1-a",
                        iteration=1,
                        parents=["root"],
                        origin="plan",
                        plan="p",
                        code="x = 2\n",
                    )
                )
                assert reader.candidates() == first  # ...sees one state, and blocks no writer
            assert len(reader.candidates()) == 2
        finally:
            reader.close()
        data = run_data(tmp_path)
        assert [n["status"] for n in data["candidates"]] == ["kept", "pending"]
        writer.event("session_end", stop_reason="completed")
        assert run_data(tmp_path)["status"]["state"] == "completed"
    finally:
        writer.close()


def test_a_session_whose_process_is_gone_is_shown_crashed(tmp_path):
    store = RunStore(tmp_path)
    store.event("session_start", pid=2**22 + 12345)  # above pid_max: no such process
    store.close()
    assert run_data(tmp_path)["status"]["state"] == "crashed"


def test_no_journal_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run journal"):
        run_data(tmp_path)


def test_time_split_arithmetic():
    llm = _union([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
    evals = _union([(2.5, 4.0), (5.5, 7.0)])
    assert llm == [(0.0, 3.0), (5.0, 6.0)]
    assert _length(llm) == 4.0 and _length(evals) == 3.0
    assert _intersect(llm, evals) == [(2.5, 3.0), (5.5, 6.0)]
    assert _concurrency([(0.0, 2.0), (1.0, 3.0)], 0.0) == [[0.0, 1], [1.0, 2], [2.0, 1], [3.0, 0]]
