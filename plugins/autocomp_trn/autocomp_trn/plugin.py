"""Entry point of the plugin (``[project.entry-points.autocomp] trn`` in pyproject.toml)."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    from .backend import TrnBackend

    return [TrnBackend]
