"""Entry point: registers the ``cuda`` backend with autocomp."""
from __future__ import annotations

from autocomp_core.hookspecs import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import CudaBackend

    return [CudaBackend]
