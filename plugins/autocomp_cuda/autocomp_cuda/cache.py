"""The harness's cache on disk: references (``refs/``), builds (``builds/``), Triton kernels
(``triton/``) and the compiled baselines' Inductor caches (``inductor/``), each entry a
directory published under its final name at once.

Processes share the cache (parallel runs, a test suite's workers). Each publishes through a
copy of its own named ``{entry}.{pid}.{random}.tmp``; a process that crashed between the copy
and the rename leaves that copy behind, and ``remove_orphans`` removes it once its process is
gone. ``touch`` marks an entry used; ``prune`` removes the least recently used entries of a
folder until it fits its bound, sparing any used in the last ``PRUNE_GRACE_S`` (another
process may be reading it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import platformdirs

#: Entries used this recently are never pruned (a judge or a worker may be reading them).
PRUNE_GRACE_S = 600.0
#: A publish copy this old is an orphan whoever made it (a pid may be reused, or live in
#: another PID namespace).
ORPHAN_AGE_S = 6 * 3600.0


def usual_roots() -> list[Path]:
    """Where the harness's caches live unless a run names another dir: $AUTOCOMP_CUDA_CACHE,
    then the user's cache dir (the default). Sandboxed children are shown none of them: a
    reference kept by an earlier run holds the answers as much as the current one's."""
    roots = [platformdirs.user_cache_path("autocomp-cuda")]
    if os.environ.get("AUTOCOMP_CUDA_CACHE"):
        roots.insert(0, Path(os.environ["AUTOCOMP_CUDA_CACHE"]).expanduser())
    return roots


def salt(root: Path) -> str:
    """This cache's own random salt (made once, mode 0600), mixed into the seeds of the inputs
    its references are computed on. Two caches never hold references for the same inputs, so
    a cache the candidate finds elsewhere on disk (one of another run, readable by the user's
    uid where the sandbox keeps it) answers none of its trials; its own cache is hidden."""
    path = root / "salt"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(16))
    return path.read_text().strip()


def publish(source: Path, target: Path) -> None:
    """Move a finished directory into the cache under its final name at once: each process
    moves its own copy under a name of its own first, and the first to finish wins; the
    others' identical copies are dropped. (One shared temporary name let one process delete
    or publish another's half-moved copy, or fail with 'Directory not empty'.)"""
    target.parent.mkdir(parents=True, exist_ok=True)  # (a prune may have emptied it away)
    tmp = Path(
        tempfile.mkdtemp(prefix=f"{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    )
    os.rmdir(tmp)  # only the unique name is wanted: the move creates it
    shutil.move(str(source), tmp)
    try:
        os.replace(tmp, target)
    except OSError:  # another process published the same one first
        if not target.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    touch(target)


def touch(entry: Path) -> None:
    """Mark an entry used now (what ``prune`` orders by)."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_orphans(folder: Path) -> list[Path]:
    """Remove the publish copies (``*.tmp``) of processes that are gone, or that are older
    than ``ORPHAN_AGE_S``. Returns what was removed."""
    removed = []
    now = time.time()
    for path in folder.glob("*.tmp"):
        parts = path.name.split(".")
        pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else None
        try:
            age = now - path.lstat().st_mtime
        except OSError:
            continue
        if (pid is not None and not _alive(pid)) or age > ORPHAN_AGE_S:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _size(entry: Path) -> int:
    total = 0
    for base, _dirs, names in os.walk(entry):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total


def prune(folder: Path, max_bytes: int) -> list[Path]:
    """Remove the least recently used entries of ``folder`` until the rest fits ``max_bytes``
    (entries used in the last ``PRUNE_GRACE_S`` are kept even past it). Returns what was
    removed. An entry disappears at once (renamed, then deleted): a reader sees all of it or
    none of it."""
    entries = []
    for path in folder.iterdir():
        if path.name.endswith(".tmp") or not path.is_dir():
            continue
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime, path, _size(path)))
    total = sum(size for _, _, size in entries)
    removed = []
    now = time.time()
    for used, path, size in sorted(entries):
        if total <= max_bytes or now - used < PRUNE_GRACE_S:
            break
        doomed = path.with_name(f"{path.name}.{os.getpid()}.pruned.tmp")
        try:
            os.rename(path, doomed)
        except OSError:  # another process pruned it first
            continue
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(path)
    return removed
