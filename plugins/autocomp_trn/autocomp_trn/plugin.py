"""Entry point of the plugin (``[project.entry-points.autocomp] trn`` in pyproject.toml)."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import TrnBackend

    return [TrnBackend]


@hookimpl
def autocomp_cli_commands(cli) -> None:
    # imported when `autocomp-core trn ...` runs, not at every command's start-up
    cli.add_lazy_command("trn", "autocomp_trn.cli:trn")
