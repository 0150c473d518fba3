"""``toyplaced``: the toy backend, asking for a named resource per evaluation (``resource``)
and logging, per evaluation it starts or sees cancelled and per opening and closing, which
node it runs on (the node's ``AUTOCOMP_TEST_NODE``, ``engine`` where unset) and in which
process; ``stall_on`` makes evaluations on one node wait until it is killed (or the
evaluation is cancelled)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
from toy_plugin import ToyBackend, ToyOptions

from autocomp_core import EvalContext, EvalResult, Problem, Resources, hookimpl


class PlacedOptions(ToyOptions):
    #: a custom resource one evaluation holds (only some nodes of a cluster offer it)
    resource: str | None = None
    log_file: Path | None = None
    #: a node (its ``AUTOCOMP_TEST_NODE``) where evaluations stall until the node dies, so
    #: a test kills it mid-evaluation however loaded the machine is
    stall_on: str | None = None
    #: whether the problem's baseline stalls there too (false: a run always starts)
    stall_baseline: bool = True


class PlacedToyBackend(ToyBackend):
    name = "toyplaced"
    options_type = PlacedOptions
    options: PlacedOptions

    def _log(self, *words: str) -> None:
        if self.options.log_file:
            node = os.environ.get("AUTOCOMP_TEST_NODE", "engine")
            with self.options.log_file.open("a") as fh:
                fh.write(" ".join((node, str(os.getpid()), *words)) + "\n")

    async def __aenter__(self) -> PlacedToyBackend:
        self._log("open")
        return self

    async def aclose(self) -> None:
        self._log("close")

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        self._log("eval", code_digest(code))
        try:
            if (
                self.options.stall_on
                and os.environ.get("AUTOCOMP_TEST_NODE") == self.options.stall_on
                and (self.options.stall_baseline or code != problem.baseline_code)
            ):
                await anyio.sleep_forever()
            return await super().evaluate(problem, code, ctx)
        except anyio.get_cancelled_exc_class():
            self._log("cancelled", code_digest(code))
            raise

    def resources(self) -> Resources:
        custom = {self.options.resource: 1.0} if self.options.resource else {}
        return Resources(cpus=1, memory_mb=512, custom=custom)


def code_digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:12]


@hookimpl
def autocomp_register_backends() -> list[type]:
    return [PlacedToyBackend]
