"""Building and loading the compiled model (`_native.cc`).

The extension is compiled on first use with the machine's C++ compiler (the plugin already
needs a compiler toolchain) and cached under a key made of its source, the compiler and the
Python version, so an edit to the source or a new interpreter builds it afresh. `build()`
returns the path of the shared library, or raises `NativeUnavailable` with the reason;
callers then use the Python model, which gives the same results, more slowly. `missing()`
says, without building, whether this machine has what the build needs.

`load(path)` imports a built library and returns `native_model`, the module with the
classes that wrap it (`NativeGemmini`, `NativeTiming`, `NativeMemory`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("_native.cc")
FLAGS = ["-O2", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing"]
LIBS = ["-ldl"]  # dlsym (in libc itself from glibc 2.34)
COMPILERS = ("c++", "g++", "clang++-19", "clang++")
MODULE = f"{__package__}._native"


class NativeUnavailable(RuntimeError):
    """The compiled model cannot be built here (the message says why)."""


def compiler() -> str | None:
    import shutil

    for name in (os.environ.get("CXX"), *COMPILERS):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def cache_dir() -> Path:
    root = os.environ.get("AUTOCOMP_GEMMINI_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autocomp-gemmini"


def missing() -> str | None:
    """What the build needs and this machine lacks (a quick check: nothing is built), or None."""
    import sysconfig

    if compiler() is None:
        return f"no C++ compiler found (tried {', '.join(COMPILERS)})"
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        return f"Python.h not found in {include} (install the Python development headers)"
    return None


def build() -> Path:
    """The compiled model for this interpreter, built if needed (a few seconds, once)."""
    result = _build()
    if isinstance(result, str):
        raise NativeUnavailable(result)
    return result


def built() -> Path | None:
    """`build()`, or None where the compiled model is unavailable (logged once, with the reason)."""
    result = _build()
    return None if isinstance(result, str) else result


@lru_cache(maxsize=1)
def _build() -> Path | str:
    """The built library, or the reason there is none (remembered: a failed build is not retried)."""
    reason = _try_build()
    if isinstance(reason, str):
        import logging  # here, not at the top: Spike's interpreter imports this module too

        logging.getLogger(__name__).warning(
            "Gemmini: the compiled model is unavailable, the Python model runs "
            "(same results, slower): %s",
            reason,
        )
    return reason


def _try_build() -> Path | str:
    import hashlib
    import subprocess
    import sysconfig
    import tempfile

    problem = missing()
    if problem is not None:
        return problem
    cxx = compiler()
    assert cxx is not None
    include = sysconfig.get_paths()["include"]
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False).stdout
    key = hashlib.sha256(
        "\0".join([SOURCE.read_text(), cxx, version, sys.version, *FLAGS, *LIBS]).encode()
    ).hexdigest()
    out = cache_dir() / key[:16] / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    if out.exists():
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".so")
        os.close(fd)
    except OSError as exc:
        return f"cannot write the build cache {out.parent}: {exc}"
    run = subprocess.run(
        [cxx, *FLAGS, f"-I{include}", str(SOURCE), "-o", tmp, *LIBS],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        os.unlink(tmp)
        return f"compiling {SOURCE.name} failed:\n{run.stderr[-2000:]}"
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)  # atomic: concurrent builds of the same key are harmless
    return out


def load(path: str | Path | None = None) -> ModuleType:
    """The classes over the compiled model (module `native_model`), from `path` or a fresh build."""
    if MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(MODULE, path or build())
        if spec is None or spec.loader is None:
            raise NativeUnavailable(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[MODULE] = module
    return importlib.import_module(f"{__package__}.native_model")
