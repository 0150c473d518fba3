"""Executors: where sandboxed commands run. Built-in: ``local``, this machine.

A plugin adds one (a cluster, a remote board) by returning an ``ExecutorSpec`` from
``autocomp_register_executors``. An executor's ``run`` has the signature and result of
``autocomp_core.run_sandboxed``. The consumer of this extension point is the engine's
scale-out executor, which asks its cluster for each evaluation's ``Resources``; until it
lands, the engine evaluates on this machine and backends call the sandbox directly.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .hookspecs import hookimpl
from .sandbox import SandboxLimits, SandboxResult, run_sandboxed


@runtime_checkable
class Executor(Protocol):
    async def run(self, argv: list[str], *, limits: SandboxLimits, cwd: Path | None = None,
                  env: dict[str, str] | None = None, stdin: bytes | None = None,
                  files: dict[str, str | bytes] | None = None) -> SandboxResult:
        """Run one command isolated and limited; return how it ended."""
        ...


@dataclass(frozen=True)
class ExecutorSpec:
    name: str
    description: str
    create: Callable[..., Executor]  # keyword options from the run config -> Executor


class LocalExecutor:
    """Runs commands on this machine through the sandbox."""

    async def run(self, argv: list[str], *, limits: SandboxLimits, cwd: Path | None = None,
                  env: dict[str, str] | None = None, stdin: bytes | None = None,
                  files: dict[str, str | bytes] | None = None) -> SandboxResult:
        return await run_sandboxed(argv, limits=limits, cwd=cwd, env=env, stdin=stdin,
                                   files=files)


def _create_local(**options: Any) -> LocalExecutor:
    if options:
        raise ValueError(f"executor 'local' takes no options, got: {', '.join(sorted(options))}")
    return LocalExecutor()


LOCAL = ExecutorSpec("local", "this machine, in a sandboxed child process group", _create_local)


@hookimpl
def autocomp_register_executors() -> list[ExecutorSpec]:
    return [LOCAL]
