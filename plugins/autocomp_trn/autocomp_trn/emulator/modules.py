"""The NKI import paths, built as in-memory modules for the tracing process only.

``install()`` puts read-only module objects into ``sys.modules`` for two APIs:

- the current API (NKI 0.8): ``nki``, ``nki.language``, ``nki.isa``, ``nki.typing``,
  ``nki.compiler`` and ``nki.lnc``;
- the legacy API ``neuronxcc.nki`` (``.language``, ``.isa``, ``.typing``), kept for the original
  system's kernels and traces (Neuron 2.34 removed it from the compiler).

A kernel speaks one of them: ``note_import`` (called by the tracing process for every import the
kernel makes) refuses a kernel that imports both. Nothing is written to disk or installed, so a
real Neuron SDK is never shadowed outside that process.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types

from . import compiler, isa, isa_v2, language
from .indexing import NkiError
from .language import current, lnc
from .tracer import HBM, Tile

CURRENT, LEGACY = "nki", "neuronxcc"
#: the API roots the kernel being traced imported
_IMPORTED: set[str] = set()


def note_import(root: str) -> None:
    """Record that the kernel imported ``root``; a kernel mixing both APIs is refused."""
    if root not in (CURRENT, LEGACY):
        return
    _IMPORTED.add(root)
    if len(_IMPORTED) > 1:
        raise NkiError(
            "the kernel imports both the current NKI API (nki) and the legacy neuronxcc.nki: "
            "use only `import nki` (neuronxcc.nki inside a kernel is a compile error since "
            "NKI 0.4 and is removed in Neuron 2.34)",
            "err_mixed_api",
        )


def imported_api() -> str:
    """``"current"`` when the kernel imported ``nki``, else ``"legacy"``."""
    return "current" if CURRENT in _IMPORTED else "legacy"


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
        removed = self.__dict__.get("_removed", {}).get(name)
        if removed is not None:
            version, replacement = removed
            raise NkiError(
                f"{self.__name__}.{name} was removed in {version}: use {replacement}",
                "err_removed_api",
            )
        legacy = " (neuronxcc.nki is the legacy API)" if self.__name__.startswith(LEGACY) else ""
        raise NkiError(
            f"{self.__name__}.{name} is not provided by this NKI emulator{legacy} (see the ISA "
            "reference in the prompt for the supported API)",
            "err_unsupported_api",
        )


def _module(name: str, doc: str, names: dict, removed: dict | None = None) -> ReadOnlyModule:
    mod = ReadOnlyModule(name, doc)
    for key, value in names.items():
        setattr(mod, key, value)
    mod.__dict__["_removed"] = removed or {}
    mod._frozen = True
    return mod


# ---------------------------------------------------------------- nki.jit and nki.typing


class Kernel:
    """What ``@nki.jit`` returns: calling it traces the kernel (the harness supplies inputs).
    ``compile_config`` is the kernel's ``nki.compiler.CompileConfig`` (None: the defaults)."""

    _active = 0  # kernel calls in progress (a kernel may call another)

    def __init__(self, func, compile_config=None, **options) -> None:
        if "mode" in options and options["mode"] not in (
            "auto",
            "baremetal",
            "simulation",
            "benchmark",
        ):
            raise NkiError(f"nki.jit mode {options['mode']!r} is not available in this emulator")
        if "platform_target" in options:
            raise NkiError(
                "nki.jit(platform_target=...) was deprecated in NKI 0.3 and is an error since "
                "0.4: the target comes from the compilation",
                "err_removed_api",
            )
        if compile_config is not None and not isinstance(compile_config, compiler.CompileConfig):
            raise compiler.CompileConfigError(
                "TypeError: compile_config must be an nki.compiler.CompileConfig, got "
                f"{type(compile_config).__name__}"
            )
        self.func = func
        self.compile_config = compile_config
        functools.update_wrapper(self, func)

    def __call__(self, *args, **kwargs):
        if Kernel._active and self.compile_config is not None:
            raise NkiError(
                f"NkiValidationError: kernel {self.func.__name__!r} is called from inside another "
                "kernel but sets a compile config: only the outermost kernel may",
                "err_compile_config",
            )
        Kernel._active += 1
        try:
            return self.func(*args, **kwargs)
        finally:
            Kernel._active -= 1

    def __getitem__(self, grid):
        raise NkiError(
            "SPMD launch grids (kernel[n](...)) are not supported by this emulator: "
            "loop over the grid inside the kernel",
            "err_unsupported_api",
        )


def jit(func=None, mode: str = "auto", **options):
    """Mark a function as an NKI kernel (``@nki.jit`` or ``@nki.jit(compile_config=...)``)."""
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


def _legacy() -> dict[str, ReadOnlyModule]:
    lang = _module(
        "neuronxcc.nki.language",
        "NKI language (legacy neuronxcc.nki API)",
        {n: getattr(language, n) for n in language.PUBLIC},
    )
    isa1 = _module(
        "neuronxcc.nki.isa",
        "NKI ISA (legacy neuronxcc.nki API)",
        {n: getattr(isa, n) for n in isa.PUBLIC},
    )
    typing1 = _typing_module("neuronxcc.nki.typing")
    nki1 = _module(
        "neuronxcc.nki",
        "NKI (legacy neuronxcc.nki API, removed in Neuron 2.34)",
        {"jit": jit, "language": lang, "isa": isa1, "typing": typing1},
    )
    neuronxcc = _module("neuronxcc", "Neuron compiler (emulated, legacy NKI)", {"nki": nki1})
    return {
        "neuronxcc": neuronxcc,
        "neuronxcc.nki": nki1,
        "neuronxcc.nki.language": lang,
        "neuronxcc.nki.isa": isa1,
        "neuronxcc.nki.typing": typing1,
    }


def _current() -> dict[str, ReadOnlyModule]:
    names = {n: getattr(language, n) for n in language.PUBLIC}
    names.update({n: getattr(current, n) for n in current.PUBLIC})
    lang = _module("nki.language", "NKI language (NKI 0.8)", names, current.REMOVED)
    isa2 = _module("nki.isa", "NKI ISA (NKI 0.8)", {n: getattr(isa_v2, n) for n in isa_v2.PUBLIC})
    typing2 = _typing_module("nki.typing")
    comp = _module(
        "nki.compiler",
        "NKI per-kernel compile configuration",
        {n: getattr(compiler, n) for n in compiler.PUBLIC},
    )
    lnc_mod = _module("nki.lnc", "NKI LNC communication", {n: getattr(lnc, n) for n in lnc.PUBLIC})
    nki2 = _module(
        "nki",
        "NKI (NKI 0.8)",
        {
            "jit": jit,
            "language": lang,
            "isa": isa2,
            "typing": typing2,
            "compiler": comp,
            "lnc": lnc_mod,
        },
    )
    return {
        "nki": nki2,
        "nki.language": lang,
        "nki.isa": isa2,
        "nki.typing": typing2,
        "nki.compiler": comp,
        "nki.lnc": lnc_mod,
    }


def build() -> dict[str, ReadOnlyModule]:
    modules = {**_legacy(), **_current()}
    for mod in modules.values():
        mod.__dict__["__path__"] = []  # packages, so `import a.b` resolves through sys.modules
    return modules


def install(generation: str = "trn1", sbuf_bytes: int = 192 * 1024) -> None:
    language.tile_size.total_available_sbuf_size = sbuf_bytes
    current.tile_size.set_sbuf(sbuf_bytes)
    isa._generation[0] = generation
    _IMPORTED.clear()
    sys.modules.update(build())


#: one ``installed()`` block at a time in a process: two overlapping blocks (threads) would each
#: restore what the other installed, and leave the NKI modules behind
_INSTALLED = threading.RLock()


@contextlib.contextmanager
def installed(generation: str = "trn1", sbuf_bytes: int = 192 * 1024):
    """``install()`` for the duration of a block, restoring whatever those names were before."""
    with _INSTALLED:
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


__all__ = [
    "HBM",
    "Kernel",
    "Tile",
    "build",
    "imported_api",
    "install",
    "installed",
    "jit",
    "note_import",
]
