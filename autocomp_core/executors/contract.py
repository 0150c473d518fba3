"""What an executor is: the ``Executor`` protocol and the ``EvalRequest`` it is sent.

Below the executors that implement it (``local``, ``ray``) and the package that registers
them; the engine's ``Evaluator`` sends every evaluation of a run through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from ..contract.backend import Backend, EvalContext, EvalResult, Problem
    from ..contract.resources import Resources


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
