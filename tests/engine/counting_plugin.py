"""``toycount``: the toy backend, plus one line appended to a file per real evaluation,
so tests can count evaluations across processes (kill and resume)."""
from __future__ import annotations

from toy_plugin import ToyBackend

from autocomp_core import hookimpl


class CountingToyBackend(ToyBackend):
    name = "toycount"
    option_names = ToyBackend.option_names | {"count_file"}

    async def evaluate(self, problem, code, ctx):
        path = self.options.get("count_file")
        if path:
            with open(path, "a") as fh:
                fh.write(f"{len(code)}\n")
        return await super().evaluate(problem, code, ctx)


@hookimpl
def autocomp_register_backends():
    return [CountingToyBackend]
