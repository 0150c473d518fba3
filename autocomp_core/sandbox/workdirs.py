"""Private temp work dirs that no engine leaves behind, even one killed outright.

An engine removes its work dirs when a run ends, but one that is SIGKILLed (or killed for
memory) cannot. So each work dir is *held* while in use: a shared ``flock`` on the dir,
which the kernel releases when its holder dies, whatever PID namespace or container the
holder runs in. The first work dir a process makes starts a sweep of the temp dir (in a
background thread) that removes work dirs nobody holds and nothing has changed for
``STALE_S``: those of dead engines. The age keeps the sweep off a dir made a moment ago
whose maker has not taken its lock yet.

The sweep removes with ``shutil.rmtree``'s descriptor-based walk and nothing else: it never
follows a symlink and never changes a permission, so a tree planted in the world-writable
temp dir cannot turn it against another path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

#: A held work dir's name ends in SUFFIX; only those starting with NAME_PREFIX are swept.
NAME_PREFIX, SUFFIX = "autocomp-", ".work"
#: A dir nobody holds is abandoned once nothing in it has changed for this long.
STALE_S = 600.0

_sweep: threading.Thread | None = None
_sweep_lock = threading.Lock()


def remove_tree(path: Path) -> None:
    """Remove a work dir whatever the program did to it (read-only dirs included)."""

    def make_writable_and_retry(func, target, exc_info):
        if not isinstance(exc_info[1], PermissionError):
            return  # a path gone, or a symlink: nothing to make writable (and no chmod through it)
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)

    shutil.rmtree(path, onerror=make_writable_and_retry)


class HeldDir:
    """A fresh private temp dir (mode 0700), held until ``release``."""

    def __init__(self, prefix: str) -> None:
        start_sweep()
        self.path = Path(tempfile.mkdtemp(prefix=prefix, suffix=SUFFIX))
        self._fd: int | None = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def release(self, remove: bool = True) -> None:
        """Remove the dir (unless ``remove`` is false) and let go of it; once only."""
        if self._fd is None:
            return
        try:
            if remove:
                remove_tree(self.path)
        finally:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def private_workdir(prefix: str) -> Iterator[Path]:
    """A held work dir (see ``HeldDir``), removed, whatever its content, on exit."""
    held = HeldDir(prefix)
    try:
        yield held.path
    finally:
        held.release()


def sweep_abandoned(folder: Path | None = None, stale_s: float = STALE_S) -> list[Path]:
    """Remove the work dirs in ``folder`` (the temp dir) that nobody holds and that have not
    changed for ``stale_s``; return them. Anything it cannot open, lock or stat is left."""
    folder = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(NAME_PREFIX) and entry.name.endswith(SUFFIX)):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or time.time() - info.st_mtime < stale_s:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its engine lives
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                removed.append(Path(entry.path))
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def start_sweep() -> threading.Thread:
    """This process's one sweep of the temp dir, in a background thread: started by the first
    call, the same thread (running or done) after."""
    global _sweep
    with _sweep_lock:
        if _sweep is None:
            _sweep = threading.Thread(
                target=sweep_abandoned, name="autocomp-workdir-sweep", daemon=True
            )
            _sweep.start()
        return _sweep
