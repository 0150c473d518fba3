"""The ``local`` executor: evaluations run in this process's event loop, each program in a
sandboxed child process group of this machine (the backend calls the sandbox)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, Self

from ..contract.resources import local_slots, machine_capacity
from .guarded import evaluate_guarded

if TYPE_CHECKING:
    from ..contract.backend import Backend, EvalResult
    from ..contract.resources import Resources
    from .contract import EvalRequest


class LocalExecutor:
    """This machine: as many evaluations at once as its CPUs, memory and the resources the
    hardware config says it has allow (``local_slots``)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        pass

    def slots(self, resources: Resources) -> int:
        return local_slots(resources)

    async def prepare(self, backend: Backend, slots: int) -> None:
        pass  # evaluations run in this process: nothing to start

    async def evaluate(self, request: EvalRequest) -> EvalResult:
        result = await evaluate_guarded(request.backend, request.problem, request.code, request.ctx)
        result.placement = {"executor": "local", "host": socket.gethostname()}
        return result

    def stalled(self) -> str | None:
        return None  # this machine is always there

    async def describe(self) -> dict[str, Any]:
        return {"kind": "local", "host": socket.gethostname(), "capacity": machine_capacity()}
