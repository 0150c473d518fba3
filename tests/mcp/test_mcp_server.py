"""``autocomp-core mcp`` end to end: the MCP SDK's own client starts the server as a real
process over stdio (and over HTTP with a token), lists the toy backend, evaluates programs,
and starts, follows, stops and resumes runs that talk to the scripted LLM server."""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import tomli_w
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
from scripted_llm import VARIANTS, reply

SERVER = [sys.executable, "-m", "autocomp_core.cli", "mcp"]
#: polls of a run's status before a test gives up (a loaded machine runs slowly)
POLL_S, POLLS = 0.5, 600


@pytest.fixture(scope="module")
def llm():
    server = LLMTestServer(lambda req: reply(req.prompt)).start_in_thread()
    yield server
    server.stop_thread()


def client(cwd: Path) -> Client:
    """A client that starts the server as its own process (the toy backend loaded by the
    root conftest's AUTOCOMP_PLUGINS and PYTHONPATH, which the server's runs inherit)."""
    params = StdioServerParameters(
        command=SERVER[0], args=SERVER[1:], env=dict(os.environ), cwd=str(cwd)
    )
    return Client(params)


def toy_run(llm: LLMTestServer, run_dir: Path | None = None, iterations: int = 2) -> dict:
    config: dict[str, Any] = {
        "backend": "toy",
        "problem": "sum_squares",
        "seed": 7,
        "models": {"plan": [f"openai-compatible@{llm.openai_base_url}::scripted"]},
        "search": {"iterations": iterations, "beam_size": 2, "plans_per_candidate": 2},
        "evaluation": {"parallelism": 1},
        "llm": {"max_retries": 1, "timeout_s": 30},
    }
    if run_dir is not None:
        config["run_dir"] = str(run_dir)
    return config


async def call(c: Client, tool: str, **arguments: Any) -> Any:
    """A tool's answer (its structured content, or its text); a tool error fails the test."""
    result = await c.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{tool}: {text}"
    return result.structured_content if result.structured_content is not None else text


async def error_of(c: Client, tool: str, **arguments: Any) -> str:
    result = await c.call_tool(tool, arguments)
    assert result.is_error, f"{tool} did not fail: {result.content}"
    return result.content[0].text


async def wait_for(c: Client, run: str, done: Any) -> dict:
    for _ in range(POLLS):
        status = await call(c, "run_status", run=run)
        if done(status):
            return status
        await anyio.sleep(POLL_S)
    raise AssertionError(f"run {run} never got there: {status}")


def ended(status: dict) -> bool:
    return status["state"] not in ("starting", "running")


@pytest.mark.asyncio
async def test_backends_problems_and_evaluation(tmp_path):
    async with client(tmp_path) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert {"start_run", "run_status", "best_program", "stop_run", "resume_run"} <= tools

        backends = await call(c, "list_backends")
        toy = next(b for b in backends["backends"] if b["name"] == "toy")
        assert toy["healthy"] and toy["problems"] >= 1
        problems = await call(c, "list_problems", backend="toy")
        assert "sum_squares" in [p["id"] for p in problems["problems"]]

        good = await call(
            c, "evaluate_program", backend="toy", problem="sum_squares", code=VARIANTS["generator"]
        )
        assert good["correct"] and good["metric"] > 0 and good["unit"] == "lines"

        broken = await c.call_tool(
            "evaluate_program",
            {"backend": "toy", "problem": "sum_squares", "code": VARIANTS["syntax slip"]},
        )
        assert broken.is_error
        headline, record = broken.content[0].text, json.loads(broken.content[1].text)
        assert headline.startswith("program failed: compile_error: SyntaxError"), headline
        assert "\n" not in headline
        assert record["correct"] is False and record["failure"] == "compile_error"

        wrong = await c.call_tool(
            "evaluate_program",
            {"backend": "toy", "problem": "sum_squares", "code": VARIANTS["wrong sum"]},
        )
        assert wrong.is_error and wrong.content[0].text.startswith("program failed: wrong_answer")

        unknown = await error_of(c, "list_problems", backend="nope")
        assert "unknown backend 'nope'" in unknown and "\n" not in unknown
        missing = await error_of(
            c, "evaluate_program", backend="toy", problem="no_such_problem", code="x = 1"
        )
        assert "problem" in missing and "\n" not in missing


@pytest.mark.asyncio
async def test_a_run_to_its_end_its_best_program_and_report(llm, tmp_path):
    async with client(tmp_path) as c:
        started = await call(c, "start_run", config=toy_run(llm))
        run = started["run"]
        # a run directory of the default name, below the server's working directory
        assert Path(run).parent == tmp_path / "runs"
        status = await wait_for(c, run, ended)
        assert status["state"] == "completed", status
        assert status["iterations_done"] == status["iterations_total"] == 2
        assert status["llm_calls"] > 0 and status["evaluations"] > 0

        best = await call(c, "best_program", run=run)
        assert best["code"] == (Path(run) / "best.py").read_text()
        assert best["score"] == status["best_score"]
        report = await call(c, "run_report", run=run)
        assert report.startswith("# autocomp run: toy / sum_squares")
        assert best["code"].strip() in report
        # an ordinary run: its journal says it finished, and `report` reads it
        store = RunStore(run, readonly=True)
        try:
            assert store.get_meta("stop_reason") == "completed"
        finally:
            store.close()

        again = await error_of(c, "start_run", config=toy_run(llm, Path(run)))
        assert "already holds a run" in again
        bad = await error_of(c, "start_run", config={**toy_run(llm), "search": {"beam_size": 0}})
        assert bad.count("\n") == 0 and "search.beam_size" in bad


@pytest.mark.asyncio
async def test_stop_a_running_run_then_resume_it(llm, tmp_path):
    run_dir = tmp_path / "stopped"
    llm.pause()  # every LLM call waits: the run is surely running when it is stopped
    try:
        async with client(tmp_path) as c:
            config = tmp_path / "stopped.toml"  # a config file and overrides, as optimize takes
            config.write_text(tomli_w.dumps(toy_run(llm, run_dir, iterations=3)))
            await call(c, "start_run", config_path=str(config), overrides=["search.iterations=1"])
            await wait_for(c, str(run_dir), lambda s: s["state"] == "running")
            stopped = await call(c, "stop_run", run=str(run_dir))
            assert stopped["iterations_total"] == 1
            assert stopped["state"] == "interrupted", stopped
            assert stopped["exit_code"] == 130  # as after Ctrl-C
            summary = json.loads((run_dir / "summary.json").read_text())
            assert summary["stop_reason"] == "interrupted"
            not_running = await error_of(c, "stop_run", run=str(run_dir))
            assert "is not running (interrupted)" in not_running

            llm.resume()
            await call(c, "resume_run", run=str(run_dir), overrides=["budget.llm_calls=100"])
            status = await wait_for(c, str(run_dir), ended)
            assert status["state"] == "completed", status
            assert (await call(c, "best_program", run=str(run_dir)))["code"]
            refused = await error_of(
                c, "resume_run", run=str(run_dir), overrides=["search.iterations=3"]
            )
            assert "resume may only change" in refused
    finally:
        llm.resume()


@pytest.mark.asyncio
async def test_a_run_outlives_its_client_and_a_later_session_stops_it(llm, tmp_path):
    """The documented lifetime: a run goes on when the client (and with it the server)
    goes away; a later session finds it by its run directory and stops it cleanly."""
    run_dir = tmp_path / "outlives"
    llm.pause()
    try:
        async with client(tmp_path) as c:
            await call(c, "start_run", config=toy_run(llm, run_dir, iterations=1))
            first = await wait_for(c, str(run_dir), lambda s: s["state"] == "running")
        # the first server has exited with its client; the run's process has not
        async with client(tmp_path) as c:
            status = await call(c, "run_status", run=str(run_dir))
            assert status["state"] == "running" and status["pid"] == first["pid"], status
            listed = await call(c, "list_runs", folder=str(tmp_path))
            assert [(r["run"], r["state"]) for r in listed["runs"]] == [(str(run_dir), "running")]
            stopped = await call(c, "stop_run", run=str(run_dir))
            assert stopped["state"] == "interrupted", stopped
            assert "pid" not in stopped
    finally:
        llm.resume()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server():
    """The server over HTTP on a free port, its token in the environment."""
    port = free_port()
    env = {**os.environ, "AUTOCOMP_MCP_TOKEN": "s3cret-token"}
    proc = subprocess.Popen(
        [*SERVER, "--http", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    yield proc, f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.asyncio
async def test_http_needs_the_token(http_server):
    proc, url = http_server
    async with httpx2.AsyncClient() as http:
        for _ in range(POLLS):
            try:
                refused = await http.post(url, json={})
                break
            except httpx2.ConnectError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                await anyio.sleep(0.2)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
    headers = {"Authorization": "Bearer s3cret-token"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as c,
    ):
        problems = await call(c, "list_problems", backend="toy")
        assert problems["problems"]


def test_without_the_sdk_it_says_how_to_install_it():
    hide = (
        "import sys; sys.modules['mcp'] = None; sys.argv = ['autocomp-core', 'mcp']; "
        "from autocomp_core.cli import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "error: the MCP server needs the MCP SDK: pip install 'autocomp-core[mcp]'"
    )


def test_http_without_a_token_is_refused():
    env = {k: v for k, v in os.environ.items() if k != "AUTOCOMP_MCP_TOKEN"}
    out = subprocess.run([*SERVER, "--http"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert (
        out.stderr.strip()
        == "error: --http: needs a token (env AUTOCOMP_MCP_TOKEN or --token-file)"
    )


def top_modules(tree: ast.AST) -> set[str]:
    """The top-level packages a module imports absolutely, anywhere in it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_only_the_server_imports_the_sdk():
    """`pip install autocomp-core` pulls no MCP SDK, and nothing but the server's own
    modules imports it (the command imports the server only when it runs)."""
    root = Path(__file__).parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("mcp")]
    assert project["optional-dependencies"]["mcp"]
    sdk = {"mcp", "mcp_types", "uvicorn", "starlette"}
    importing = sorted(
        str(path.relative_to(root))
        for path in (root / "autocomp_core").rglob("*.py")
        if top_modules(ast.parse(path.read_text())) & sdk
    )
    assert importing == ["autocomp_core/mcp/http_transport.py", "autocomp_core/mcp/server.py"]
    lazy = ast.parse((root / "autocomp_core/mcp/command.py").read_text())
    top = [n for n in lazy.body if isinstance(n, ast.ImportFrom) and n.module == "server"]
    assert not top  # imported inside the command, after the SDK is known to be there


def test_a_token_file_others_can_read_is_refused(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    token.chmod(0o644)
    out = subprocess.run(
        [*SERVER, "--http", "--token-file", str(token)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == f"error: --token-file {token}: others can read it (chmod 600)"


def test_http_flags_without_http_are_refused():
    out = subprocess.run([*SERVER, "--port", "9000"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --port: only with --http"
