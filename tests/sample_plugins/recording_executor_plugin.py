"""An executor plugin, registered as a third party would register one (Slurm, Kubernetes):
``recording`` evaluates on this machine and appends each program's problem to a file;
``lose_when``: a program containing this text is lost with its "machine" (reported once as
an attempt lost, then an infra error), as on a cluster whose node dies under it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from autocomp_core import EvalResult, FailureKind, hookimpl
from autocomp_core.executors import EvalRequest, ExecutorSpec
from autocomp_core.executors.local import LocalExecutor


class RecordingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log_file: Path
    lose_when: str | None = None


class RecordingExecutor(LocalExecutor):
    def __init__(self, options: RecordingOptions) -> None:
        self.log_file = options.log_file
        self.lose_when = options.lose_when

    async def evaluate(self, request: EvalRequest):
        with self.log_file.open("a") as fh:
            fh.write(f"{request.problem.id} {len(request.code)}\n")
        if self.lose_when and self.lose_when in request.code:
            loss = {"attempt": 1, "node_id": "n1", "node_ip": "10.0.0.9", "reason": "node died"}
            if request.on_lost is not None:
                request.on_lost(loss)
            return EvalResult(
                False,
                failure=FailureKind.INFRA_ERROR,
                feedback="the evaluation was lost with its node 10.0.0.9: node died",
                placement={"executor": "recording", "attempts": 1, "lost": [loss]},
            )
        result = await super().evaluate(request)
        result.placement["recorded"] = True
        return result


@hookimpl
def autocomp_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            "recording",
            "this machine, logging every evaluation (test)",
            lambda options, plugins: RecordingExecutor(options),
            RecordingOptions,
        )
    ]
