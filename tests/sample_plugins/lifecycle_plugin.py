"""``toylife``: the toy backend, writing ``open``, ``eval`` and ``close`` to a file as the
engine opens it, evaluates with it and closes it."""

from __future__ import annotations

from pathlib import Path

from toy_plugin import ToyBackend, ToyOptions

from autocomp_core import EvalContext, EvalResult, Problem, Resources, hookimpl


class LifecycleOptions(ToyOptions):
    events_file: Path
    #: GPUs one evaluation asks for; this backend offers none, so any is unsatisfiable
    gpus: float = 0.0


class LifecycleToyBackend(ToyBackend):
    name = "toylife"
    options_type = LifecycleOptions
    options: LifecycleOptions

    def _log(self, event: str) -> None:
        with self.options.events_file.open("a") as fh:
            fh.write(event + "\n")

    async def __aenter__(self) -> LifecycleToyBackend:
        self._log("open")
        return self

    async def aclose(self) -> None:
        self._log("close")

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        self._log("eval")
        return await super().evaluate(problem, code, ctx)

    def resources(self) -> Resources:
        return Resources(cpus=1, gpus=self.options.gpus)


@hookimpl
def autocomp_register_backends() -> list[type]:
    return [LifecycleToyBackend]
