"""Executors: where evaluations run. Built in: ``local`` (this machine) and ``ray`` (a Ray
cluster, with ``pip install 'autocomp-core[ray]'``).

The engine sends every evaluation through the run's executor (``[executor] kind = ...``,
or ``--executor``): an ``EvalRequest`` in, the backend's ``EvalResult`` out, with
``EvalResult.placement`` saying where it ran. LLM calls, budgets and the journal stay in
the engine's process; an executor only evaluates.

A plugin adds one (Slurm, Kubernetes, a remote board) by returning an ``ExecutorSpec`` from
``autocomp_register_executors``: a name, a pydantic model of its options (the other keys
of ``[executor]``) and a function that builds it from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..config import ExecutorConfig, validated
from ..errors import ConfigError
from ..hookspecs import hookimpl
from .contract import EvalRequest, Executor
from .ray_executor import RayOptions

__all__ = [
    "LOCAL",
    "RAY",
    "EvalRequest",
    "Executor",
    "ExecutorSpec",
    "NoOptions",
    "autocomp_register_executors",
    "create_executor",
]


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ExecutorSpec:
    name: str
    description: str
    #: builds the executor from its validated options and the run's extra plugin modules
    create: Callable[[Any, tuple[str, ...]], Executor]
    #: pydantic model of the options (the keys of ``[executor]`` besides ``kind``)
    options_type: type[BaseModel] = NoOptions


def _create_local(options: Any, plugins: tuple[str, ...]) -> Executor:
    from .local import LocalExecutor

    return LocalExecutor()


def _create_ray(options: Any, plugins: tuple[str, ...]) -> Executor:
    from .ray_executor import RayExecutor

    return RayExecutor(options, plugins)


LOCAL = ExecutorSpec("local", "this machine, in sandboxed child process groups", _create_local)
RAY = ExecutorSpec(
    "ray",
    "a Ray cluster: evaluation slots (Ray actors) holding the backend's "
    "resources (pip install 'autocomp-core[ray]')",
    _create_ray,
    RayOptions,
)


def create_executor(
    config: ExecutorConfig, specs: dict[str, ExecutorSpec], plugins: tuple[str, ...] = ()
) -> Executor:
    """The executor ``[executor]`` asks for, among the registered ``specs``, not yet
    connected; ``plugins``: the run's extra plugin modules (a remote node loads them too).
    Bad input raises ``ConfigError`` naming the key."""
    if config.kind not in specs:
        raise ConfigError(
            f"executor.kind: unknown executor {config.kind!r} (installed: "
            f"{', '.join(sorted(specs))})"
        )
    spec = specs[config.kind]
    return spec.create(validated(spec.options_type, config.options(), "executor"), plugins)


@hookimpl
def autocomp_register_executors() -> list[ExecutorSpec]:
    return [LOCAL, RAY]
