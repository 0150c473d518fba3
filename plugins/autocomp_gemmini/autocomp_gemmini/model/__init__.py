"""Our Gemmini model: a bit-exact functional model plus a timing model, driven by RoCC commands.

The names below load on first use (PEP 562): importing a submodule such as `base` or
`native_model` must not import numpy through this package.
"""

from __future__ import annotations

import importlib

EXPORTS = {
    "ArrayConfig": "base",
    "GemminiError": "base",
    "Gemmini": "functional",
    "ByteMemory": "memory",
    "Memory": "memory",
    "TimingModel": "timing",
    "TimingParams": "timing",
}
__all__ = [
    "ArrayConfig",
    "ByteMemory",
    "Gemmini",
    "GemminiError",
    "Memory",
    "TimingModel",
    "TimingParams",
]


def __getattr__(name: str):
    if name in EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
