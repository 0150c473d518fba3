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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..config import ConfigError, ExecutorConfig, validated
from ..hookspecs import hookimpl
from .ray_executor import RayOptions

if TYPE_CHECKING:
    from ..backend import Backend, EvalContext, EvalResult, Problem
    from ..resources import Resources


@dataclass(frozen=True)
class EvalRequest:
    """One evaluation: this program of this problem on this backend (with its hardware
    config and options), in this context. An executor that evaluates elsewhere rebuilds
    the backend there from ``backend.name``, ``backend.hardware`` and ``backend.options``.
    ``on_lost``, when given, is called at once with each attempt lost with its worker or
    node (``attempt``, ``node_id``, ``node_ip``, ``reason``): the engine journals it."""

    backend: Backend
    problem: Problem
    code: str
    ctx: EvalContext
    on_lost: Callable[[dict[str, Any]], None] | None = field(default=None, compare=False)


@runtime_checkable
class Executor(Protocol):
    """Where evaluations run. Used as ``async with executor:`` around a run (or a suite of
    runs): entering connects (a ``ConfigError`` when it cannot, before anything is spent),
    leaving disconnects."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    def slots(self, resources: Resources) -> int:
        """How many evaluations with these needs run at once (ValueError naming a resource
        nobody offers)."""
        ...

    async def prepare(self, backend: Backend, slots: int) -> None:
        """Called once the run knows its backend and how many evaluations it runs at once,
        before its first evaluation: an executor that evaluates elsewhere starts its
        workers now, without waiting for them (what it starts, leaving stops)."""
        ...

    async def evaluate(self, request: EvalRequest) -> EvalResult:
        """Evaluate one program; never raises for a failure of the program or of the
        machine it ran on (those are failed ``EvalResult`` values, ``INFRA_ERROR`` for the
        latter). Raises ``RunStopped`` when it can evaluate nothing more for now (the
        ``ray`` executor: no live node has held a slot for ``no_nodes_timeout_s``): the
        run stops cleanly and resumes later."""
        ...

    def stalled(self) -> str | None:
        """Why evaluations cannot run at the moment, and for how long they have waited
        (shown by the progress display); None while they can."""
        ...

    async def describe(self) -> dict[str, Any]:
        """What the executor runs on, for ``doctor`` (JSON-ready)."""
        ...


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
