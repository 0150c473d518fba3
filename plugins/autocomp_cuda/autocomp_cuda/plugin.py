"""Entry point: registers the ``cuda`` backend with autocomp."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import CudaBackend

    return [CudaBackend]


@hookimpl
def autocomp_cli_commands(cli) -> None:
    # imported when `autocomp-core cuda ...` runs, not at every command's start-up
    cli.add_lazy_command("cuda", "autocomp_cuda.cli:cuda")
