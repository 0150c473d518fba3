"""``timed``: the toy backend's problems, with an evaluation of known duration that uses no
CPU: it waits ``delay_s`` (a device or a simulator busy elsewhere), then scores a program
by its length; a program that does not compile is a compile error. For benchmarks of the
engine's and the executors' own costs, which a CPU-heavy check would hide on a small
machine. Load it with ``AUTOCOMP_PLUGINS=timed_backend`` and this folder on the path."""

from __future__ import annotations

import anyio
from pydantic import Field
from toy_plugin import ToyBackend

from autocomp_core import BackendOptions, EvalContext, EvalResult, FailureKind, Problem, hookimpl


class TimedOptions(BackendOptions):
    delay_s: float = Field(0.5, ge=0, description="seconds one evaluation takes")


class TimedBackend(ToyBackend):
    name = "timed"
    description = "toy problems, evaluations of known duration (benchmarks)"
    metric_unit = "characters"
    options_type = TimedOptions  # type: ignore[assignment]
    options: TimedOptions  # type: ignore[assignment]

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        await anyio.sleep(self.options.delay_s)
        try:
            compile(code, "candidate.py", "exec")  # compiled only, never run
        except SyntaxError as exc:
            return EvalResult(False, failure=FailureKind.COMPILE_ERROR, feedback=str(exc))
        return EvalResult(True, metric=float(len(code)), unit=self.metric_unit)

    def metric_lower_bound(self, problem: Problem) -> float | None:
        return None


@hookimpl
def autocomp_register_backends() -> list[type]:
    return [TimedBackend]
