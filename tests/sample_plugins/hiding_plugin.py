"""A hook wrapper (pluggy ``wrapper=True``) that hides the ``toy`` backend from the others."""

from __future__ import annotations

from collections.abc import Generator

from autocomp_core import hookimpl


@hookimpl(wrapper=True)
def autocomp_register_backends() -> Generator[None, list[list[type]], list[list[type]]]:
    results = yield
    return [[cls for cls in found if cls.name != "toy"] for found in results]
