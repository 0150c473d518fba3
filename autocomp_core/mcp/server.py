"""The MCP server's tools, and the transports that serve them.

Every tool answers JSON (a dict, also as the result's structured content), except
``run_report`` (Markdown). A failure is an MCP tool error whose text is one line: bad input
names what is wrong, as the command line would; anything else is reported as a bug.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from ..contract.backend import EvalContext
from ..contract.plugins import PluginRegistry, build_registry, describe_backends, load_problem
from ..errors import AutocompError
from ..executors.guarded import evaluate_guarded
from .runs import Runs

P = ParamSpec("P")
R = TypeVar("R")

#: what an agent reads first: which tool to call when
INSTRUCTIONS = """\
autocomp optimizes a kernel for an accelerator with an LLM-driven beam search.
1. list_backends, then list_problems(backend): what can be optimized here.
2. evaluate_program(backend, problem, code): check and measure one program (seconds);
   a wrong program comes back as a tool error naming the failure, with the record.
3. start_run(config_path or config): starts a search in the background (minutes to hours)
   and returns its run id (its run directory) at once. Budgets in the config bound it.
4. run_status(run) every 30-60 s: state (running, completed, interrupted, budget.*,
   crashed), iterations done, best score and speedup, cost.
5. best_program(run) and run_report(run) while it runs or after: the fastest correct
   program so far, and the report as Markdown.
6. stop_run(run) stops it cleanly (nothing is lost); resume_run(run) continues a stopped,
   crashed or budget-stopped run (raise a budget with overrides=["budget.usd=10"]).
Runs go on when this session ends; their run directories keep everything, and
list_runs(folder) finds them again in a later session.
"""


def one_line_errors(tool: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Our errors as tool errors in their own one line; any other as a bug, in one line."""

    @functools.wraps(tool)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await tool(*args, **kwargs)
        except ToolError:
            raise
        except AutocompError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            raise ToolError(f"internal error (a bug): {type(exc).__name__}: {exc}") from exc

    return wrapper


def error_line(feedback: str) -> str:
    """The line of an evaluation's feedback that says what went wrong: the first naming an
    error (a compiler's, a Python exception's), else the first."""
    lines = [line.strip() for line in feedback.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")


def build_server(plugins: PluginRegistry | None = None) -> MCPServer:
    """The server with its tools; ``plugins``: the registry backends come from."""
    registry = plugins or build_registry()
    runs = Runs()
    # the SDK's own log lines (a tool error each) would land in the client's log: warnings only
    server: MCPServer = MCPServer("autocomp", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    @one_line_errors
    async def list_backends() -> dict[str, Any]:
        """The installed backends (targets): name, version, description, whether their
        tools are present, and how many problems each ships."""
        return await anyio.to_thread.run_sync(describe_backends, registry)

    @server.tool()
    @one_line_errors
    async def list_problems(backend: str) -> dict[str, Any]:
        """The problems a backend ships: id and description (the id goes into a run's
        config as ``problem``, and into evaluate_program)."""

        def problems() -> list[dict[str, str]]:
            made = registry.make_backend(backend)
            return [{"id": p.id, "description": p.description} for p in made.problems()]

        return {"backend": backend, "problems": await anyio.to_thread.run_sync(problems)}

    @server.tool()
    @one_line_errors
    async def evaluate_program(
        backend: str,
        problem: str,
        code: str,
        hardware: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        timeout_s: float = 120.0,
        seed: int = 0,
    ) -> CallToolResult:
        """Check one program against the problem's reference and measure it, sandboxed as
        in a run: the evaluation record (correct, failure, metric and unit, verification,
        feedback, bounded output). A program that is not correct is a tool error: its
        first line names the failure, the record follows."""
        made = registry.make_backend(backend, hardware or {}, options or {})
        target = load_problem(made, problem)
        async with made:
            result = await evaluate_guarded(
                made, target, code, EvalContext(seed=seed, timeout_s=timeout_s)
            )
        record = {**result.to_dict(), "lower_bound": made.metric_lower_bound(target), "seed": seed}
        content = [TextContent(type="text", text=json.dumps(record, indent=2, default=str))]
        if result.correct:
            return CallToolResult(content=content, structured_content=record)
        headline = f"program failed: {record.get('failure') or 'incorrect'}" + (
            f": {line}" if (line := error_line(result.feedback or "")) else ""
        )
        return CallToolResult(
            content=[TextContent(type="text", text=headline), *content], is_error=True
        )

    @server.tool()
    @one_line_errors
    async def start_run(
        config_path: str | None = None,
        config: dict[str, Any] | None = None,
        overrides: list[str] | None = None,
    ) -> dict[str, Any]:
        """Start an optimization in the background and return its run id (its run
        directory) at once. config_path: a run config (TOML); config: the same as a table
        (merged over the file); overrides: ["search.iterations=4", ...]. Checked first:
        bad input is an error and nothing is spent. The run is an ordinary run (journal,
        budgets, exports, `autocomp-core serve`), and goes on after this session ends."""
        return await runs.start(config_path, config, list(overrides or []))

    @server.tool()
    @one_line_errors
    async def list_runs(folder: str = "runs") -> dict[str, Any]:
        """The runs at or below a folder (default: runs/ of the server's directory), newest
        first: run id, state, backend, problem, progress, best score, speedup, cost."""
        return runs.runs_in(folder)

    @server.tool()
    @one_line_errors
    async def run_status(run: str) -> dict[str, Any]:
        """A run's state (starting, running, crashed, failed, or its stop reason: completed,
        interrupted, budget.usd, ...), iterations done of total, candidates, best score,
        speedup, LLM calls, evaluations, tokens, cost and wall time."""
        return runs.status(run)

    @server.tool()
    @one_line_errors
    async def best_program(run: str) -> dict[str, Any]:
        """The fastest correct program of a run so far: its code, plan, score, speedup over
        the initial program (``baseline``: true while nothing beat the initial program)."""
        return runs.best(run)

    @server.tool(structured_output=False)  # Markdown, as it is
    @one_line_errors
    async def run_report(run: str) -> str:
        """The run's report as Markdown (rewritten after every iteration): scores per
        iteration, usage and cost per phase and model, the best program."""
        return runs.report(run)

    @server.tool()
    @one_line_errors
    async def resume_run(run: str, overrides: list[str] | None = None) -> dict[str, Any]:
        """Continue a stopped, crashed or budget-stopped run in the background; it repeats
        no answered LLM call and no finished evaluation. overrides may raise budgets or
        change llm.*, evaluation.*, executor.* (["budget.usd=10"])."""
        return runs.resume(run, list(overrides or []))

    @server.tool()
    @one_line_errors
    async def stop_run(run: str) -> dict[str, Any]:
        """Stop a running run as Ctrl-C does: it saves its state and exits (waits up to a
        minute for that); resume_run continues it. Returns its status."""
        return await runs.stop(run)

    return server
