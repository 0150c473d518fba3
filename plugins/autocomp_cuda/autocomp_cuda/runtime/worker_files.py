"""Reading a file a sandboxed worker wrote, in the engine or the judge: a worker may leave
anything in its own dir under the names the harness reads (a symlink to the reader's own
stdin, a FIFO no one will ever write, a device, a file of many gigabytes), so such a file is
opened without following a link and without waiting, and read only where it is a regular
file of bounded size; anything else is ``Unfit``, the worker's doing.

Standard library only (the engine imports it too).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path


class Unfit(OSError):
    """A worker-written file that is not a regular file of bounded size."""


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path``. FileNotFoundError where there is none;
    ``Unfit`` where it is a link, a FIFO, a device or a socket, or larger than ``limit``."""
    parts: list[bytes] = []
    _read(path, limit, parts.append)
    return b"".join(parts)


def copy_file(path: str | Path, dest: Path, limit: int) -> int:
    """``read_bytes``'s file copied to ``dest`` a chunk at a time (never all of it in memory);
    returns its size. The same errors, and ``dest`` is then left incomplete."""
    with open(dest, "wb") as out:
        return _read(path, limit, out.write)


def _read(path: str | Path, limit: int, take: Callable[[bytes], object]) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise Unfit(f"{os.path.basename(path)} is a symbolic link, not a file") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unfit(f"{os.path.basename(path)} is not a regular file")
        if info.st_size > limit:
            raise Unfit(f"{os.path.basename(path)} holds {info.st_size} bytes (at most {limit})")
        left = limit + 1
        while left > 0:  # (it may still be growing: never read past the limit)
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            take(chunk)
            left -= len(chunk)
        if left <= 0:
            raise Unfit(f"{os.path.basename(path)} grew past {limit} bytes while read")
        return limit + 1 - left
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int) -> str:
    """``read_bytes`` decoded (undecodable bytes replaced)."""
    return read_bytes(path, limit).decode(errors="replace")
