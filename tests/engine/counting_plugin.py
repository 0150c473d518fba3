"""``toycount``: the toy backend, plus one line appended to a file per real evaluation,
so tests can count evaluations across processes (kill and resume)."""

from __future__ import annotations

from toy_plugin import ToyBackend, ToyOptions

from autocomp_core import hookimpl


class CountingOptions(ToyOptions):
    count_file: str | None = None


class CountingToyBackend(ToyBackend):
    name = "toycount"
    options_type = CountingOptions

    async def evaluate(self, problem, code, ctx):
        path = self.options.count_file
        if path:
            with open(path, "a") as fh:
                fh.write(f"{len(code)}\n")
        return await super().evaluate(problem, code, ctx)


@hookimpl
def autocomp_register_backends():
    return [CountingToyBackend]
