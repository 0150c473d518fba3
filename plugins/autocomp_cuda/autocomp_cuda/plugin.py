"""Entry point: registers the ``cuda`` backend with autocomp."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import CudaBackend

    return [CudaBackend]


@hookimpl
def autocomp_cli_commands(cli) -> None:
    from .cli import cuda

    cli.add_command(cuda)
