"""Entry point: registers the ``trn`` backend with autocomp."""
from __future__ import annotations

from autocomp_core.hookspecs import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import TrnBackend

    return [TrnBackend]
