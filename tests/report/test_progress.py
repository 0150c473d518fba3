"""Terminal progress: a live panel on a terminal (a real pseudo-terminal here), nothing
drawn under --log-json; in-flight counts come from the LLM door and the evaluator."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess

import anyio
import pytest
import tomli_w
from report_helpers import toy_run_config

from autocomp_core.config import BudgetConfig, validate
from autocomp_core.contract.plugins import build_registry
from autocomp_core.engine.journal import Evaluator, JournaledLLM
from autocomp_core.engine.progress import Progress
from autocomp_core.ledger.accounting import Budget, Ledger
from autocomp_core.ledger.store import RunStore
from autocomp_core.llm.client import LLMClient
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import LLMRequest, Prompt
from autocomp_core.run.runner import load_backend
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()

CLI = preloaded_cli()
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(*args: str) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; all it drew, escapes removed."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "110", "LINES": "40", "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [*CLI, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return ANSI.sub("", b"".join(chunks).decode(errors="replace"))


@pytest.fixture
def config(tmp_path, scripted_server):
    path = tmp_path / "run.toml"
    cfg = toy_run_config(
        scripted_server, tmp_path / "run", iterations=1, plans_per_candidate=2, codes_per_plan=2
    )
    cfg["budget"] = {"usd": 5.0, "llm_calls": 500}
    path.write_text(tomli_w.dumps(cfg))
    return path


def test_live_panel_on_a_terminal(config):
    screen = on_a_terminal("optimize", str(config))
    assert "╭" in screen and "╰" in screen  # a panel was drawn
    for label in (
        "autocomp toy / sum_squares",
        "iteration",
        "plans",
        "codes",
        "evaluations",
        "in flight",
        "running",
        "queued",
        "best",
        "tokens",
        "elapsed",
    ):
        assert label in screen, label
    assert re.search(r"budget\s+\$ [\d.]+ of 5\.00 \(\d+%\); LLM calls \d+ of 500", screen)
    assert re.search(r"best\s+[\d.]+ lines \([\d.]+x\)", screen)
    assert "[autocomp] iteration 1/1 done" in screen  # event lines scroll above the panel


def test_log_json_draws_nothing_on_a_terminal(config):
    screen = on_a_terminal("--log-json", "optimize", str(config))
    lines = [line for line in screen.replace("\r", "\n").splitlines() if line.strip()]
    body = [line for line in lines if not line.startswith(("stop reason:", "run directory:"))]
    assert "╭" not in screen and "[autocomp]" not in screen
    assert all(json.loads(line) for line in body)


@pytest.mark.asyncio
async def test_in_flight_counts_come_from_the_llm_door_and_the_evaluator(tmp_path):
    config = validate(
        {"backend": "toy", "problem": "sum_squares", "backend_options": {"delay_s": 0.6}}
    )
    backend, problem, _ = load_backend(config)
    ledger = Ledger()
    budget = Budget(BudgetConfig(), ledger)
    store = RunStore(tmp_path)
    evaluator = Evaluator(
        backend, problem, store, ledger, budget, slots=1, timeout_s=30, seed=1, want_feedback=False
    )
    async with LLMTestServer(lambda req: "ok", latency=0.6) as server:
        client = LLMClient(LLMSettings(max_retries=0), PROVIDERS)
        llm = JournaledLLM(client, store, ledger, budget)
        progress = Progress(ledger=ledger)
        progress.watch(llm, evaluator)
        model = f"openai-compatible@{server.openai_base_url}::m"

        def ask(phase: str):
            return llm.complete(
                LLMRequest(
                    model=model, phase=phase, prompt=Prompt(system="s", static="", dynamic=phase)
                )
            )

        try:
            async with client, anyio.create_task_group() as tg:
                tg.start_soon(evaluator.evaluate, problem.baseline_code)
                tg.start_soon(evaluator.evaluate, problem.baseline_code + "\n# another\n")
                for phase in ("plan", "code", "repair"):
                    tg.start_soon(ask, phase)
                await anyio.sleep(0.3)
                assert progress.in_flight() == {
                    "plans": 1,
                    "codes": 2,
                    "evaluations": 1,
                    "queued": 1,
                }
            assert progress.in_flight() == {"plans": 0, "codes": 0, "evaluations": 0, "queued": 0}
        finally:
            store.close()
