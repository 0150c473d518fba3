"""Entry point registered under `[project.entry-points.autocomp] gemmini`."""

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends():
    from .backend import GemminiBackend

    return [GemminiBackend]
