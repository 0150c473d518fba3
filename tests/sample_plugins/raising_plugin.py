"""A plugin whose registration hook fails at run time."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backends() -> list[type]:
    raise RuntimeError("licence server unreachable")
