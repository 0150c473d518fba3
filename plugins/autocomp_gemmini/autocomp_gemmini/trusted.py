"""The trusted objects every candidate is linked with (start-up code, runtime, harness): compiled
once per configuration and kept in a cache that no candidate can write.

What the objects depend on makes the cache key: the sources under runtime/, harness/ and
include/, the compiler and its flags, the problem's macros, the hardware's gemmini_params.h
and the mode (model or external). What changes with each evaluation (the inputs' seed,
external mode's nonce) is not compiled in: the evaluator writes it into the linked program
(harness.h: harness_params), so a cached object serves every evaluation of its key.

The cache lives in the user's cache dir (beside the compiled model's), which sandboxed
programs cannot write: they run as a fresh uid owning only their own work dir, and never see
the cache at all. On a miss the objects are compiled in the sandbox in a private work dir,
then published by the evaluator: copied with a manifest of their SHA-256 into a fresh temp
dir in the cache, renamed into place in one step (concurrent builders: the first rename
wins). Every use hashes the bytes it copies into the evaluation's work dir against the
manifest; an entry that does not match (or is incomplete) is removed and built afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from autocomp_core.sandbox import SandboxLimits, private_workdir, run_sandboxed

from . import toolchain
from .catalog import Spec
from .config import GemminiConfig
from .model import native

MANIFEST = "manifest.json"
log = logging.getLogger(__name__)


def sources(spec: Spec) -> list[Path]:
    """The trusted sources, in link order (the candidate's object comes after them)."""
    return [
        toolchain.RUNTIME_DIR / "crt.S",
        toolchain.RUNTIME_DIR / "runtime.c",
        toolchain.RUNTIME_DIR / "machine.c",
        toolchain.HARNESS_DIR / "harness_common.c",
        toolchain.HARNESS_DIR / f"harness_{spec.family}.c",
    ]


def object_names(spec: Spec) -> list[str]:
    return [f"{src.stem}.o" for src in sources(spec)]


def cache_root() -> Path:
    return native.cache_dir() / "trusted"


@lru_cache(maxsize=4)
def _compiler_identity(cc: str) -> str:
    return subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout


def compile_flags(spec: Spec, model: bool) -> list[str]:
    return [
        *toolchain.CFLAGS,
        *(f"-D{k}={v}" for k, v in spec.defines().items()),
        *(["-DGEMMINI_MODEL"] if model else []),
    ]


def cache_key(cc: str, spec: Spec, hw: GemminiConfig, model: bool) -> str:
    digest = hashlib.sha256()
    for part in (
        cc,
        _compiler_identity(cc),
        *compile_flags(spec, model),
        hw.params_header(),
        spec.family,
    ):
        digest.update(part.encode() + b"\0")
    for folder in (toolchain.RUNTIME_DIR, toolchain.HARNESS_DIR, toolchain.INCLUDE_DIR):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(toolchain.PACKAGE_DIR)).encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()


async def compile_into(
    cc: str, spec: Spec, hw: GemminiConfig, model: bool, dest: Path, limits: SandboxLimits
) -> list[Path] | str:
    """Compile the trusted objects in the sandbox, in `dest`: their paths, or the compiler's error."""
    (dest / "gemmini_params.h").write_text(hw.params_header())
    includes = toolchain.include_flags(dest)
    argv = [cc, *compile_flags(spec, model), *includes, "-c", *map(str, sources(spec))]
    run = await run_sandboxed(argv, cwd=dest, limits=limits)
    if not run.ok:
        return f"compiling the harness failed:\n{(run.stderr or run.stdout)[-3000:]}"
    return [dest / name for name in object_names(spec)]


async def objects(
    cc: str, spec: Spec, hw: GemminiConfig, model: bool, dest: Path, limits: SandboxLimits
) -> list[Path] | str:
    """The trusted objects, copied into `dest` from the cache (checked against its manifest),
    or compiled and published there first. Their paths, or why they could not be built."""
    entry = cache_root() / cache_key(cc, spec, hw, model)
    copied = _copy_verified(entry, object_names(spec), dest)
    if copied is not None:
        return copied
    if entry.exists():
        log.warning("Gemmini: the cached harness objects in %s do not match, rebuilding", entry)
        shutil.rmtree(entry, ignore_errors=True)
    with private_workdir("autocomp-gemmini-harness-") as build:
        os.chmod(build, 0o755)  # the sandbox's uid writes the objects here
        built = await compile_into(cc, spec, hw, model, build, limits)
        if isinstance(built, str):
            return built
        _publish(entry, built)
        out = []
        for path in built:
            shutil.copyfile(path, dest / path.name)
            out.append(dest / path.name)
        return out


def _copy_verified(entry: Path, names: list[str], dest: Path) -> list[Path] | None:
    """Copy the entry's objects into `dest` if every one hashes to its manifest's digest."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        blobs = {name: (entry / name).read_bytes() for name in names}
    except (OSError, ValueError):
        return None
    if any(
        not isinstance(manifest, dict) or manifest.get(n) != hashlib.sha256(b).hexdigest()
        for n, b in blobs.items()
    ):
        return None
    out = []
    for name, blob in blobs.items():  # the bytes checked are the bytes used
        (dest / name).write_bytes(blob)
        out.append(dest / name)
    return out


def _publish(entry: Path, built: list[Path]) -> None:
    """Put the objects and their manifest in the cache in one step (best effort: a cache that
    cannot be written costs a compile per evaluation, nothing else)."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    except OSError as exc:
        log.warning("Gemmini: cannot write the harness cache %s: %s", entry.parent, exc)
        return
    manifest = {}
    for path in built:
        blob = path.read_bytes()
        (tmp / path.name).write_bytes(blob)
        manifest[path.name] = hashlib.sha256(blob).hexdigest()
    (tmp / MANIFEST).write_text(json.dumps(manifest))
    try:
        os.rename(tmp, entry)
    except OSError:  # another evaluation published this key first
        shutil.rmtree(tmp, ignore_errors=True)
