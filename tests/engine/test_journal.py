"""The journal holds for ordinary runs: a run with failed or empty answers replays, a run a
budget stopped replays to the same stop, a billed answer is never asked for again on
resume, and journals of other schema versions are migrated or refused."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async, replay_async, resume_async
from autocomp_core.ledger.store import SCHEMA_VERSION, RunStore
from autocomp_core.testing.llm_server import Fault, FaultPlan, LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


def beams(run_dir) -> dict[int, list[str]]:
    store = RunStore(run_dir)
    try:
        last = store.last_iteration() or 0
        return {i: store.beam(i) for i in range(last + 1)}
    finally:
        store.close()


def scripted_with(faults: dict[int, Fault]) -> LLMTestServer:
    """The scripted LLM, failing the requests that arrive at the given positions."""
    return LLMTestServer(
        lambda r: reply(r.prompt), faults=FaultPlan(force=lambda r: faults.get(r.index))
    )


def no_retries(cfg: dict) -> dict:
    cfg["llm"] = {"max_retries": 0, "timeout_s": 30}
    return cfg


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", [Fault.SERVER_ERROR, Fault.EMPTY, Fault.TRUNCATE])
async def test_a_run_with_a_failed_answer_replays_it_as_the_failure_it_was(tmp_path, fault):
    async with scripted_with({1: fault, 4: fault}) as server:
        cfg = no_retries(
            toy_config(server, tmp_path, iterations=2, plans_per_candidate=2, codes_per_plan=2)
        )
        original = await optimize_async(cfg)
        assert original.stop_reason == "completed"
        assert original.data["llm_failures"] == 2
        asked = server.request_count
        replayed = await replay_async(tmp_path / "run", into=tmp_path / "replay")
        assert server.request_count == asked  # no LLM was called
    assert replayed.stop_reason == "completed"
    assert replayed.data["llm_failures"] == 2 and replayed.data["llm_calls"] == asked
    assert beams(tmp_path / "replay") == beams(tmp_path / "run")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "budget,reason",
    [({"llm_calls": 5}, "budget.llm_calls"), ({"evaluations": 4}, "budget.evaluations")],
)
async def test_a_run_stopped_by_a_budget_replays_to_the_same_stop(
    llm_server, tmp_path, budget, reason
):
    cfg = toy_config(llm_server, tmp_path, iterations=3, plans_per_candidate=2, codes_per_plan=2)
    cfg["budget"] = budget
    original = await optimize_async(cfg)
    assert original.stop_reason == reason
    asked = llm_server.request_count
    replayed = await replay_async(tmp_path / "run", into=tmp_path / "replay")
    assert llm_server.request_count == asked
    assert replayed.stop_reason == reason
    assert beams(tmp_path / "replay") == beams(tmp_path / "run")
    assert replayed.data["best_score"] == original.data["best_score"]


@pytest.mark.asyncio
async def test_a_billed_answer_is_not_asked_again_on_resume(tmp_path):
    """The first plan is truncated (billed), the second fails with a 500 (not billed); the
    run stops on a budget and resumes: the truncated request is read from the journal,
    the failed one asked again."""
    async with scripted_with({0: Fault.TRUNCATE, 1: Fault.SERVER_ERROR}) as server:
        cfg = no_retries(
            toy_config(server, tmp_path, iterations=1, plans_per_candidate=3, codes_per_plan=1)
        )
        cfg["budget"] = {"llm_calls": 3}
        first = await optimize_async(cfg)
        assert first.stop_reason == "budget.llm_calls"
        truncated, failed = server.requests[0], server.requests[1]
        resumed = await resume_async(
            tmp_path / "run", progress=False, overrides=["budget.llm_calls=100"]
        )
        assert resumed.stop_reason == "completed"

        def times_asked(request) -> int:
            return sum(
                r.prompt == request.prompt and r.params.get("seed") == request.params.get("seed")
                for r in server.requests
            )

        assert times_asked(truncated) == 1
        assert times_asked(failed) == 2


# -- schema versions ---------------------------------------------------------------------------


def test_a_journal_of_the_unversioned_schema_is_migrated_and_resumes(thread_server, tmp_path):
    cfg = toy_config(thread_server, tmp_path, iterations=2, plans_per_candidate=2, codes_per_plan=1)
    cfg["budget"] = {"llm_calls": 3}
    from autocomp_core import optimize

    assert optimize(cfg).stop_reason == "budget.llm_calls"
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")  # as journals were before versions
    db.executescript(
        "DROP INDEX events_by_kind; DROP INDEX candidates_by_iteration; PRAGMA user_version = 0;"
    )
    db.close()
    out = subprocess.run(
        [*CLI, "resume", str(tmp_path / "run"), "--quiet", "--set", "budget.llm_calls=100"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {
        name
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'"
        )
    } == {"events_by_kind", "candidates_by_iteration"}
    db.close()
    assert RunStore(tmp_path / "run").get_meta("stop_reason") == "completed"


def test_a_journal_of_a_newer_schema_is_refused_in_one_line(thread_server, tmp_path):
    cfg = toy_config(thread_server, tmp_path, iterations=1, plans_per_candidate=1, codes_per_plan=1)
    cfg["budget"] = {"llm_calls": 1}
    from autocomp_core import optimize

    optimize(cfg)
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = (tmp_path / "run" / "run.sqlite").read_bytes()
    for command in (
        ["resume", str(tmp_path / "run")],
        ["report", str(tmp_path / "run")],
        ["replay", str(tmp_path / "run"), "--into", str(tmp_path / "again")],
    ):
        out = subprocess.run([*CLI, *command], capture_output=True, text=True)
        assert out.returncode == 2, (command, out.stderr)
        assert out.stderr.strip().splitlines() == [
            f"error: run directory {tmp_path / 'run'}: its journal has schema version "
            f"{SCHEMA_VERSION + 1}, newer than this autocomp-core reads ({SCHEMA_VERSION}); "
            "upgrade autocomp-core to use it"
        ], command
    assert (tmp_path / "run" / "run.sqlite").read_bytes() == before
    assert not (tmp_path / "again").exists()
