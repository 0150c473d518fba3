"""Entry point of the ``rvv`` plugin (``[project.entry-points.autocomp] rvv``)."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import RvvBackend

    return [RvvBackend]
