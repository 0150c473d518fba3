"""What every ``autocomp-core`` command uses, the core's and ``build-pack`` alike: the exit
status of bad input, a one-line error, JSON output and the plugin registry ``main`` loaded."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from .plugins import PluginRegistry

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def loaded_plugins() -> PluginRegistry:
    """The registry ``main`` loaded (a fresh one when the CLI is driven another way)."""
    from .plugins import build_registry

    root = click.get_current_context().find_root()
    if root.obj is None:
        root.obj = build_registry()
    return root.obj
