"""``autocomp-core build-pack`` as a user runs it: SIGKILLed at random moments and run again
(no answered LLM call is asked twice and the pack comes out the same), budgets, exit
codes and one-line errors, ``--inspect``."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pack_helpers import DOCS, make_pdf, model_of
from pack_llm import reply

from autocomp_core.contract.packs import pack_files
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = [*preloaded_cli(), "build-pack"]
#: for a run the test SIGKILLs: the killed process must be the command itself
PLAIN_CLI = [sys.executable, "-m", "autocomp_core.cli", "build-pack"]
CONCURRENCY = 2  # LLM calls in flight at most: what a kill can lose


@pytest.fixture(scope="module")
def slow_server():
    rng = random.Random(7)
    server = LLMTestServer(
        lambda req: reply(req.prompt), latency=lambda req: rng.uniform(0.05, 0.2)
    ).start_in_thread()
    yield server
    server.stop_thread()


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return [
        str(DOCS / "vecto-guide.md"),
        str(make_pdf(tmp_path_factory.mktemp("pdf") / "rules.pdf")),
    ]


def command(server, sources, out: Path, *extra: str, cli: list[str] = CLI) -> list[str]:
    return [
        *cli,
        *sources,
        "--out",
        str(out),
        "--model",
        model_of(server),
        "--target",
        "Vecto",
        "--backend",
        "toy",
        "--set",
        f"llm.max_concurrency={CONCURRENCY}",
        "--set",
        "llm.max_retries=0",
        *extra,
    ]


def pack_texts(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text() for name in pack_files(out)}


@pytest.fixture(scope="module")
def reference(slow_server, sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "pack"
    before = slow_server.request_count
    started = time.monotonic()
    done = subprocess.run(  # timed as the runs the kill test cuts short
        command(slow_server, sources, out, "--quiet", cli=PLAIN_CLI), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return {
        "out": out,
        "requests": slow_server.request_count - before,
        "seconds": time.monotonic() - started,
        "pack": pack_texts(out),
    }


def test_sigkill_then_run_again(slow_server, sources, reference, tmp_path):
    rng = random.Random(2026)
    for trial in range(2):
        out = tmp_path / f"t{trial}"
        before = slow_server.request_count
        proc = subprocess.Popen(
            command(slow_server, sources, out, "--quiet", cli=PLAIN_CLI),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, reference["seconds"] * 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        again = subprocess.run(
            command(slow_server, sources, out, "--quiet"), capture_output=True, text=True
        )
        assert again.returncode == 0, again.stderr
        asked = slow_server.request_count - before
        assert asked <= reference["requests"] + CONCURRENCY, (trial, asked)
        assert pack_texts(out) == reference["pack"], trial


def test_budget_stop_is_exit_1_and_a_larger_budget_finishes(
    slow_server, sources, reference, tmp_path
):
    out = tmp_path / "pack"
    stopped = subprocess.run(
        command(slow_server, sources, out, "--budget-calls", "1"), capture_output=True, text=True
    )
    assert stopped.returncode == 1
    assert (
        stopped.stderr.strip()
        .splitlines()[-1]
        .startswith("error: stopped: extract: budget.llm_calls reached")
    )  # route made the one call
    assert RunStore(out / ".build").count("llm_calls") == 1
    done = subprocess.run(
        command(slow_server, sources, out, "--budget-calls", "100", "--json"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert '"llm_calls": ' + str(reference["requests"]) in done.stdout
    assert pack_texts(out) == reference["pack"]


def test_inspect_prints_the_pack(reference):
    shown = subprocess.run(
        [*CLI, "--inspect", str(reference["out"])], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    menu = len(
        reference["pack"]["knowledge.toml"].split("menu = [")[1].split("]")[0].strip().splitlines()
    )
    assert f"menu: {menu} items" in shown.stdout
    assert "## Data movement" not in shown.stdout  # the PDF and Markdown build has no HTML ISA
    assert "# Synchronization instructions" in shown.stdout or "## Synchronization" in shown.stdout
    assert "built from 2 documents" in shown.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["{tmp}/notes.docx", "--out", "{tmp}/p"], "not a Markdown, HTML, text or PDF file"),
        (["--inspect", "{tmp}"], "no knowledge pack in"),
        (["{tmp}", "--out", "{tmp}/p", "--set", "search.iterations=2"], "llm.* settings only"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(tmp_path, args, message):
    (tmp_path / "notes.docx").write_text("x")
    done = subprocess.run(
        [*CLI, *[a.format(tmp=tmp_path) for a in args]], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
