"""What runs on the nodes of a Ray cluster for the ``ray`` executor.

An ``EvaluationSlot`` is a Ray actor that holds one evaluation's resources on its node for
as long as the engine is connected. It builds the backend once, from its name, hardware
config and options, loading only the plugin that provides it, keeps it open (a backend
that starts something costly on entering, a simulator or warm GPU workers, starts it once
per slot), and evaluates one program at a time exactly as on the engine's machine: the
program in a sandboxed child process group, with the same limits. It is an async actor:
its methods run on the actor's event loop, and ``ray.cancel`` of an evaluation cancels it
there, which stops the program.
"""

from __future__ import annotations

import os
from typing import Any

from ..contract.backend import Backend, EvalContext, EvalResult, FailureKind, Problem
from ..errors import ConfigError
from .guarded import evaluate_guarded


class EvaluationSlot:
    """One evaluation slot on a node, for one backend configuration (``spec``: see
    ``ray_executor.backend_spec``)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        import ray

        self.spec = spec
        self.backend: Backend | None = None
        self.error: str | None = None  # why this node cannot build the backend
        self.where = {
            "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
        }

    async def open(self) -> dict[str, Any]:
        """Build and open the backend (once); where this slot is. A node that lacks the
        plugin, refuses the configuration or fails to open the backend is recorded: each
        evaluation on this slot is an ``INFRA_ERROR`` that says so."""
        if self.backend is None and self.error is None:
            from ..contract.plugins import registry_for_backend

            spec = self.spec
            try:
                registry = registry_for_backend(spec["name"], tuple(spec["plugins"]))
                backend = registry.make_backend(spec["name"], spec["hardware"], spec["options"])
                await backend.__aenter__()
            except ConfigError as exc:
                self.error = f"node {self.where['node_ip']}: {exc}"
            except Exception as exc:  # the backend failed to open (a simulator did not start)
                self.error = f"node {self.where['node_ip']}: {type(exc).__name__}: {exc}"
            else:
                self.backend = backend
        return self.where

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> dict[str, Any]:
        """One evaluation on this node: the result as data, and where it ran."""
        await self.open()
        if self.backend is None:
            result = EvalResult(False, failure=FailureKind.INFRA_ERROR, feedback=self.error or "")
        else:
            result = await evaluate_guarded(self.backend, problem, code, ctx)
        return {"result": result.to_dict(), "where": self.where}

    async def close(self) -> None:
        backend, self.backend = self.backend, None
        if backend is not None:
            await backend.aclose()


def installed_backends(plugins: list[str]) -> dict[str, str]:
    """The backends this node can build, each with the plugin (and version) that brings it."""
    from ..contract.plugins import build_registry

    installed = {}
    for row in build_registry(tuple(plugins)).describe():
        for name in row["registered"].get("backends", []):
            installed[name] = " ".join(
                x for x in (row["distribution"] or row["name"], row["version"]) if x
            )
    return installed
