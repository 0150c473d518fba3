"""An executor plugin, registered as a third party would register one (Slurm, Kubernetes):
``recording`` evaluates on this machine and appends each program's problem to a file."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from autocomp_core import hookimpl
from autocomp_core.executors import EvalRequest, ExecutorSpec
from autocomp_core.executors.local import LocalExecutor


class RecordingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log_file: Path


class RecordingExecutor(LocalExecutor):
    def __init__(self, options: RecordingOptions) -> None:
        self.log_file = options.log_file

    async def evaluate(self, request: EvalRequest):
        with self.log_file.open("a") as fh:
            fh.write(f"{request.problem.id} {len(request.code)}\n")
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
