"""The NKI import paths, built as in-memory modules for the tracing process only.

``install()`` puts read-only module objects under ``nki``, ``nki.language``, ``nki.isa``,
``nki.typing`` (v2) and ``neuronxcc``, ``neuronxcc.nki``, ``neuronxcc.nki.language``,
``neuronxcc.nki.isa``, ``neuronxcc.nki.typing`` (v1) into ``sys.modules``. Nothing is
written to disk or installed, so a real Neuron SDK is never shadowed outside that process.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types

from . import isa, isa_v2, language
from .indexing import NkiError
from .tracer import HBM, Tile


class ReadOnlyModule(types.ModuleType):
    """A module whose attributes cannot be replaced or deleted once built."""

    _frozen = False

    def __setattr__(self, name, value):
        if self._frozen:
            raise NkiError(
                f"{self.__name__} is read-only: kernels must not monkeypatch the NKI API "
                f"(tried to set {name!r})",
                "err_monkeypatch",
            )
        super().__setattr__(name, value)

    def __delattr__(self, name):
        raise NkiError(
            f"{self.__name__} is read-only: kernels must not monkeypatch the NKI API",
            "err_monkeypatch",
        )

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NkiError(
            f"{self.__name__}.{name} is not provided by this NKI emulator (see the ISA reference "
            "in the prompt for the supported API)",
            "err_unsupported_api",
        )


def _module(name: str, doc: str, names: dict) -> ReadOnlyModule:
    mod = ReadOnlyModule(name, doc)
    for key, value in names.items():
        setattr(mod, key, value)
    mod._frozen = True
    return mod


# ---------------------------------------------------------------- nki.jit and nki.typing


class Kernel:
    """What ``@nki.jit`` returns: calling it traces the kernel (the harness supplies inputs)."""

    def __init__(self, func, **options) -> None:
        if "mode" in options and options["mode"] not in (
            "auto",
            "baremetal",
            "simulation",
            "benchmark",
        ):
            raise NkiError(f"nki.jit mode {options['mode']!r} is not available in this emulator")
        self.func = func
        functools.update_wrapper(self, func)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def __getitem__(self, grid):
        raise NkiError(
            "SPMD launch grids (kernel[n](...)) are not supported by this emulator: "
            "loop over the grid inside the kernel",
            "err_unsupported_api",
        )


def jit(func=None, mode: str = "auto", **options):
    """Mark a function as an NKI kernel (``@nki.jit`` or ``@nki.jit(mode=...)``)."""
    if func is None:
        return lambda f: Kernel(f, mode=mode, **options)
    return Kernel(func, mode=mode, **options)


class _TensorType:
    """``nt.tensor[[shape], dtype]``: an input placeholder type (shapes come from the harness)."""

    def __getitem__(self, item):
        return self


def _typing_module(name: str) -> ReadOnlyModule:
    return _module(
        name, "NKI typing placeholders", {"tensor": _TensorType(), "mutable_tensor": _TensorType()}
    )


def build() -> dict[str, ReadOnlyModule]:
    lang1 = _module(
        "neuronxcc.nki.language",
        "NKI language (v1)",
        {n: getattr(language, n) for n in language.PUBLIC},
    )
    isa1 = _module("neuronxcc.nki.isa", "NKI ISA (v1)", {n: getattr(isa, n) for n in isa.PUBLIC})
    typing1 = _typing_module("neuronxcc.nki.typing")
    lang2 = _module(
        "nki.language", "NKI language (v2)", {n: getattr(language, n) for n in language.PUBLIC}
    )
    isa2 = _module("nki.isa", "NKI ISA (v2)", {n: getattr(isa_v2, n) for n in isa_v2.PUBLIC})
    typing2 = _typing_module("nki.typing")
    nki1 = _module(
        "neuronxcc.nki",
        "NKI (v1, neuronxcc.nki)",
        {"jit": jit, "language": lang1, "isa": isa1, "typing": typing1},
    )
    nki2 = _module(
        "nki", "NKI (v2)", {"jit": jit, "language": lang2, "isa": isa2, "typing": typing2}
    )
    neuronxcc = _module("neuronxcc", "Neuron compiler (emulated)", {"nki": nki1})
    for mod in (lang1, lang2, isa1, isa2, typing1, typing2, nki1, nki2, neuronxcc):
        mod.__dict__["__path__"] = []  # packages, so `import a.b` resolves through sys.modules
    return {
        "neuronxcc": neuronxcc,
        "neuronxcc.nki": nki1,
        "neuronxcc.nki.language": lang1,
        "neuronxcc.nki.isa": isa1,
        "neuronxcc.nki.typing": typing1,
        "nki": nki2,
        "nki.language": lang2,
        "nki.isa": isa2,
        "nki.typing": typing2,
    }


def install(generation: str = "trn1", sbuf_bytes: int = 192 * 1024) -> None:
    language.tile_size.total_available_sbuf_size = sbuf_bytes
    isa._generation[0] = generation
    sys.modules.update(build())


@contextlib.contextmanager
def installed(generation: str = "trn1", sbuf_bytes: int = 192 * 1024):
    """``install()`` for the duration of a block, restoring whatever those names were before."""
    names = list(build())
    saved = {n: sys.modules.get(n) for n in names}
    install(generation, sbuf_bytes)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


__all__ = ["HBM", "Kernel", "Tile", "build", "install", "installed", "jit"]
