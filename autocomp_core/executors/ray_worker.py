"""What a Ray worker process runs for the ``ray`` executor.

The backend is built here from its name, hardware config and options through this node's
plugin registry, and its own ``evaluate`` runs exactly as on the engine's machine: the
program in a sandboxed child process group, with the same limits. Each worker process
keeps one event loop on a thread of its own and the backends it has opened, so a backend
that starts something costly on entering (a simulator, warm GPU workers) starts it once per
worker process; they are closed when the process exits.
"""

from __future__ import annotations

# Ray calls the task on a thread of its own and the loop must outlive every task (it holds
# the opened backends); a future that the Ray thread can cancel is asyncio's, not anyio's
import asyncio
import atexit
import json
import os
import threading
from typing import Any

from ..backend import Backend, EvalContext, EvalResult, FailureKind, Problem
from ..config import ConfigError

_loop: asyncio.AbstractEventLoop | None = None
_backends: dict[str, Backend] = {}


def evaluate_on_node(
    spec: dict[str, Any], problem: Problem, code: str, ctx: EvalContext
) -> dict[str, Any]:
    """The Ray task: one evaluation on this node; the result as data, and where it ran."""
    import ray

    future = asyncio.run_coroutine_threadsafe(_evaluate(spec, problem, code, ctx), _event_loop())
    try:
        result = future.result()
    except BaseException:  # cancelled by the engine (KeyboardInterrupt): stop the program too
        future.cancel()
        raise
    where = {
        "node_id": ray.get_runtime_context().get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "pid": os.getpid(),
    }
    return {"result": result.to_dict(), "where": where}


def installed_backends(plugins: list[str]) -> dict[str, str]:
    """The backends this node can build, each with the plugin (and version) that brings it."""
    from ..plugins import build_registry

    installed = {}
    for row in build_registry(tuple(plugins)).describe():
        for name in row["registered"].get("backends", []):
            installed[name] = " ".join(
                x for x in (row["distribution"] or row["name"], row["version"]) if x
            )
    return installed


async def _evaluate(
    spec: dict[str, Any], problem: Problem, code: str, ctx: EvalContext
) -> EvalResult:
    from ..journal import evaluate_guarded

    try:
        backend = await _opened_backend(spec)
    except ConfigError as exc:  # this node lacks the plugin, or refuses the configuration
        import ray

        return EvalResult(
            False,
            failure=FailureKind.INFRA_ERROR,
            feedback=f"node {ray.util.get_node_ip_address()}: {exc}",
        )
    return await evaluate_guarded(backend, problem, code, ctx)


async def _opened_backend(spec: dict[str, Any]) -> Backend:
    from ..runner import make_backend

    key = json.dumps(spec, sort_keys=True)
    if key not in _backends:
        backend = make_backend(
            spec["name"], spec["hardware"], spec["options"], tuple(spec["plugins"])
        )
        await backend.__aenter__()
        _backends[key] = backend
    return _backends[key]


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, name="autocomp-evaluations", daemon=True).start()
        atexit.register(_close_backends)
    return _loop


def _close_backends() -> None:
    if _loop is None or not _backends:
        return

    async def close_all() -> None:
        for backend in _backends.values():
            try:
                await backend.aclose()
            except Exception:  # one that fails to close must not keep the others open
                pass

    try:
        asyncio.run_coroutine_threadsafe(close_all(), _loop).result(timeout=30)
    except Exception:
        pass
