"""The ``autocomp-core`` command line: the group (``group.py``), its commands by kind
(``runs``, ``outputs``, ``backends``), ``build-pack`` (imported only when used) and the
commands plugins add."""

from __future__ import annotations

import sys

import click

from . import backends, outputs, runs  # noqa: F401  (each registers its commands)
from .group import EXIT_CLOSED_PIPE, Group, cli, quit_on_closed_pipe

__all__ = ["EXIT_CLOSED_PIPE", "Group", "cli", "main"]

cli.add_lazy_command("build-pack", "autocomp_core.cli.build_pack:build_pack")
cli.add_lazy_command("playbook", "autocomp_core.cli.playbook:playbook")


def main() -> None:
    from ..contract.plugins import build_registry

    plugins = build_registry()
    before = len(plugins.failures)
    plugins.call("autocomp_cli_commands", cli=cli)  # a plugin that raises is left out
    for failure in plugins.failures[before:]:
        click.echo(
            f"warning: plugin {failure.name} could not add commands: {failure.error}", err=True
        )
    try:
        cli(prog_name="autocomp-core", obj=plugins)
    finally:
        try:  # what is still buffered goes out now, while a closed pipe can be told apart
            sys.stdout.flush()
        except BrokenPipeError:
            quit_on_closed_pipe()
