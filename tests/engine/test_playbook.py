"""The playbook: every finished run writes what it learned; later runs' planners read the
nearest entries; ``autocomp-core playbook`` curates it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.engine.reuse import donor_schedule
from autocomp_core.errors import ConfigError
from autocomp_core.ledger.playbook import Entry, Playbook, default_path, features
from autocomp_core.ledger.store import RunStore
from autocomp_core.llm.keys import remember_secret
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


def with_playbook(server, tmp_path, name: str, problem: str = "sum_squares", **search):
    cfg = toy_config(server, tmp_path / name, iterations=2, **search)
    cfg["problem"] = problem
    cfg["playbook"] = {"enabled": True}
    return cfg


@pytest.mark.asyncio
async def test_a_finished_run_writes_its_schedule_and_failed_plans(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        await optimize_async(with_playbook(server, tmp_path, "first"))
    book = Playbook(default_path())  # the test's own (AUTOCOMP_PLAYBOOK, set by conftest)
    (entry,) = book.entries()
    book.close()
    run_dir = tmp_path / "first" / "run"
    assert (entry.backend, entry.problem, entry.run) == ("toy", "sum_squares", "first/run")
    steps = donor_schedule(run_dir).steps
    assert [s["plan"] for s in entry.schedule] == [s.plan for s in steps]
    assert entry.speedup and entry.speedup > 1
    # the scripted model writes a wrong program and a broken one for some plans
    assert {f["kind"] for f in entry.failures} >= {"wrong_answer"}
    assert all(f["plan"] and len(f["reason"]) <= 160 for f in entry.failures)
    exported = tmp_path / "team.jsonl"
    book = Playbook(default_path())
    book.export(exported)
    book.close()
    text = exported.read_text()
    assert "def solution" not in text and "API_KEY" not in text  # plans and numbers only
    assert RunStore(run_dir).get_meta("playbook_written") is True


@pytest.mark.asyncio
async def test_a_later_run_plans_with_what_earlier_runs_learned(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        await optimize_async(with_playbook(server, tmp_path, "first"))
        first_plans = [s.plan for s in donor_schedule(tmp_path / "first" / "run").steps]
        before = server.request_count
        await optimize_async(with_playbook(server, tmp_path, "second", problem="prefix_max"))
        later = [r.prompt for r in server.requests[before:] if r.prompt.rstrip().endswith("Plan:")]
    assert later and all("## What worked on similar problems" in p for p in later)
    assert all("worked" in p and first_plans[0] in p for p in later)
    record = RunStore(tmp_path / "second" / "run").get_meta("playbook")
    assert len(record["entries"]) == 1 and first_plans[0] in record["text"]


@pytest.mark.asyncio
async def test_turned_off_it_neither_reads_nor_writes(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        await optimize_async(with_playbook(server, tmp_path, "first"))
        cfg = with_playbook(server, tmp_path, "off")
        cfg["playbook"] = {"enabled": False}
        before = server.request_count
        await optimize_async(cfg)
        prompts = [r.prompt for r in server.requests[before:]]
    assert not any("What worked on similar problems" in p for p in prompts)
    book = Playbook(default_path())
    assert len(book.entries()) == 1
    book.close()


@pytest.mark.asyncio
async def test_a_corrupt_store_is_a_one_line_error_before_anything_is_spent(tmp_path):
    default_path().write_bytes(b"this is not a database at all, not even close" * 100)
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        with pytest.raises(ConfigError, match="not a playbook store"):
            await optimize_async(with_playbook(server, tmp_path, "first"))
        assert server.request_count == 0


def test_the_command_lists_shows_exports_imports_and_forgets(tmp_path):
    book = Playbook(default_path())
    from autocomp_core.ledger.playbook import Entry

    entry = Entry(
        "toy",
        "gemm",
        "gemm-64x64x64",
        [64, 64, 64],
        [],
        "r1",
        2.5,
        [{"plan": "tile the loops", "gain": 2.5}],
        [{"plan": "unroll fully", "kind": "compile_error", "reason": "too big"}],
    )
    first = book.add(entry)
    book.close()
    env = os.environ.copy()

    def cli(*args):
        return subprocess.run([*CLI, "playbook", *args], capture_output=True, text=True, env=env)

    listed = cli("list")
    assert listed.returncode == 0 and "toy/gemm-64x64x64" in listed.stdout
    shown = cli("show", str(first)).stdout
    assert (
        "worked 2.50x: tile the loops" in shown and "failed (compile_error): unroll fully" in shown
    )
    out = tmp_path / "out.jsonl"
    assert cli("export", str(out)).returncode == 0
    other = tmp_path / "other.sqlite"
    assert cli("import", str(out), "--path", str(other)).stdout.startswith("1 entries added")
    assert (
        json.loads(cli("list", "--path", str(other), "--json").stdout)[0]["problem"]
        == "gemm-64x64x64"
    )
    assert cli("forget", str(first)).returncode == 0
    assert "0 entries" in cli("list").stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"backend": "toy"}\n')
    refused = cli("import", str(bad))
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "line 1 is not an entry" in refused.stderr


def test_features_read_family_and_shapes_from_the_id_unless_the_backend_says():
    assert features("gemm-64x64x64", {}) == ("gemm", [64, 64, 64], [])
    assert features("llama/mlp_decode_b32", {})[0:2] == ("llama/mlp_decode_b", [32])
    assert features("x", {"family": "conv", "shapes": [3, 3], "dtypes": ["bf16"]}) == (
        "conv",
        [3, 3],
        ["bf16"],
    )


def test_keys_quoted_in_plans_or_feedback_never_reach_the_store_or_an_export(tmp_path):
    remember_secret("my-own-secret-value-42")
    leaked = Entry(
        backend="toy",
        family="sum_squares",
        problem="sum_squares",
        shapes=[8],
        dtypes=[],
        run="a/run",
        speedup=2.0,
        schedule=[{"plan": "call it with sk-ant-abcdefghijklmnop1234", "gain": 2.0}],
        failures=[{"plan": "p", "kind": "crash", "reason": "env had my-own-secret-value-42 in it"}],
    )
    book = Playbook(tmp_path / "book.sqlite")
    book.add(leaked)
    book.export(tmp_path / "team.jsonl")
    (stored,) = book.entries()
    book.close()
    text = (tmp_path / "team.jsonl").read_text() + json.dumps(stored.schedule + stored.failures)
    assert "sk-ant-abcdefghijklmnop1234" not in text and "my-own-secret-value-42" not in text
    assert text.count("[REDACTED]") >= 4  # in the store and in the export
