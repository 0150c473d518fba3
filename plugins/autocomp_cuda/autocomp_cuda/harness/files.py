"""Files between the harness's cache and the workers' dirs: who owns them, copying a tree
into the cache whole, reading what a worker wrote, and the locks of a shared cache."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from filelock import AsyncFileLock

from .. import cache, lockstep
from ..runtime import worker_files

#: A Triton cache larger than this is not kept (a normal one holds a few MB).
KEEP_TREE_MAX_BYTES = 256 * 2**20


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for base, dirs, names in os.walk(root):
        os.chown(base, uid, gid)
        for name in (*dirs, *names):
            os.lchown(os.path.join(base, name), uid, gid)


def take_ownership(root: Path) -> None:
    """Files a sandboxed child wrote belong to a throw-away uid; make them ours again."""
    if os.geteuid() == 0:
        _chown_tree(root, 0, 0)


def clock_socket(work: Path) -> lockstep.EngineEnds:
    """The timing socket of a started worker, owned as its dir is (the sandbox's uid)."""
    owner = work.stat()
    mine = (owner.st_uid, owner.st_gid) == (os.geteuid(), os.getegid())
    return lockstep.EngineEnds(work, None if mine else (owner.st_uid, owner.st_gid))


def give_to_worker(root: Path, work: Path) -> None:
    """Files put into a started worker's dir belong to whoever owns the dir (the sandbox's
    per-run uid), so the worker may write them (caches it adds to) as its own."""
    owner = work.stat()
    if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()):
        _chown_tree(root, owner.st_uid, owner.st_gid)


def keep_tree(source: Path, target: Path) -> None:
    """Copy a directory into the cache under its final name at once (never half of it)."""
    if target.exists() or not source.is_dir():
        return
    entries = list(source.rglob("*"))
    if any(not (p.is_symlink() or p.is_dir() or p.is_file()) for p in entries):
        return  # (a FIFO, a device or a socket: not a cache a worker made honestly)
    files = [p for p in entries if p.is_file() and not p.is_symlink()]
    if not files or sum(p.stat().st_size for p in files) > KEEP_TREE_MAX_BYTES:
        return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.copy.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, symlinks=True)
    take_ownership(tmp)
    cache.publish(tmp, target)


#: The most the harness reads of a worker's result or log (a larger one is not read).
WORKER_TEXT_MAX_BYTES = 64 * 2**20


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file a worker wrote; None where it is missing, not JSON, or not a regular file
    of bounded size (``worker_files``: never a link followed, never a wait)."""
    try:
        return json.loads(worker_files.read_bytes(path, WORKER_TEXT_MAX_BYTES))
    except (OSError, ValueError):
        return None


def read_text(path: Path) -> str:
    """A text file a worker wrote; "" where it cannot be (as ``read_json``)."""
    try:
        return worker_files.read_text(path, WORKER_TEXT_MAX_BYTES)
    except OSError:
        return ""


def shared_lock(cache_dir: Path, name: str) -> AsyncFileLock:
    """Held by one of the processes sharing this cache at a time (parallel runs, a test
    suite's workers): a reference or build is made once, the others wait and find it."""
    return AsyncFileLock(cache_dir / "locks" / f"{name}.lock")


def torch_tag() -> str:
    """The installed torch's version, part of every cache key (this process never imports it)."""
    from importlib.metadata import version

    try:
        return version("torch")
    except Exception:
        return "unknown"
