"""A plugin whose hook name is misspelled (the hook is ``autocomp_register_backends``)."""

from __future__ import annotations

from autocomp_core import hookimpl


@hookimpl
def autocomp_register_backend() -> list[type]:
    from toy_plugin import ToyBackend

    return [ToyBackend]
