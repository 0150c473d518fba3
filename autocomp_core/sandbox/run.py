"""Running untrusted programs: process isolation, hard limits, bounded output.

``run_sandboxed`` starts a program and always comes back: at the wall-clock limit the
program's whole process group is SIGKILLed and the call returns without waiting on a
child that does not die. Output is read as it comes, kept up to a cap per stream and the
rest read and thrown away, so a program printing a gigabyte fills neither memory nor disk.

How a run is laid out (Linux)::

    engine ─exec─ supervisor ─fork─ init (session leader) ─fork─ program (exec of argv)

The engine runs no Python in a forked copy of itself (its threads, PyTorch's or the
event loop's, may hold locks a fork would copy held): it execs ``supervisor.py``
with a fresh interpreter, which sets up the isolation, starts the program and writes how
the run ended to a status pipe the program never holds. See that module for the layout.
A ``python -m MODULE`` program may instead be forked, supervisor and all, from a server
that imported MODULE once (``preload``, see ``preload.py``): the same sandbox without
paying the imports on every run. A run's work dir is held while it lives, so that an engine
killed outright leaves nothing in the temp dir for long (``workdirs``).

The isolation in force on this machine (``isolation_level()``, probed once per process,
shown by ``autocomp-core doctor`` and in every run's summary) is the strongest of (the
read-only mounts need Linux 5.12 or later: ``user namespaces`` is not used without them,
``namespaces+uid`` goes on without them, its per-run uid guarding the user's files):

* ``namespaces+uid`` (the engine runs as root): the program gets its own PID namespace
  and ``/proc``; a fresh network namespace (no interfaces up, not even loopback) unless
  ``SandboxLimits.network``; a private mount namespace in which ``/tmp``, ``/var/tmp``,
  ``/dev/shm`` and ``/run/lock`` are fresh tmpfs (showing only the work dir), so scratch
  files vanish with the run, and every other mount but the work dir is read-only (the
  engine's own paths included); and, with ``drop_privileges`` (default), a fresh
  unprivileged uid/gid per run that owns only the work dir, so writes elsewhere fail with
  EACCES and ``RLIMIT_NPROC`` (counted per user) bounds exactly this run's processes. If
  the interpreter lives under a directory other users cannot enter (``/root`` with mode
  0700, typical for pyenv), that directory is replaced, inside the sandbox only, by an
  empty one that shows just the entry leading to the interpreter. ``uid``: root where
  namespaces are refused (the per-run uid only).
* ``user namespaces`` (no root, and the kernel allows unprivileged user namespaces): the
  same PID, mount and network namespaces and read-only mounts inside a user namespace; the
  program keeps the user's uid (the read-only mounts are what keep it off the user's files).
* ``bubblewrap`` (no root, ``bwrap`` installed, e.g. where the kernel refuses user
  namespaces to other programs): ``bwrap`` builds the same namespaces.
* ``none``: limits and a process group only; a process that left the group with
  ``setsid`` can outlive the run.

In the namespace levels a process that called ``setsid`` dies with the run: the kernel
kills everything left in a PID namespace when its init dies. Without a per-run uid,
``RLIMIT_NPROC`` counts all of the user's processes, so ``max_processes`` must leave room
for them (and root is not bound by it: with ``drop_privileges=False`` a fork bomb is
stopped only by the wall limit). ``AUTOCOMP_SANDBOX_ISOLATION`` may ask for a weaker
level than the strongest available (``user namespaces``, ``bubblewrap``, ``none``).
"""

from __future__ import annotations

import abc

# asyncio for one thing anyio lacks: callbacks that read a pipe whenever it is readable
# (loop.add_reader), so output is drained while the run awaits its deadline.
import asyncio
import contextlib
import errno
import fcntl
import functools
import json
import math
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import anyio

from ..errors import BackendError
from . import supervisor
from .preload import PreloadedRun, PreloadServer
from .supervisor import BUBBLEWRAP, NAMESPACES, NONE, UID_ONLY, USER_NAMESPACES
from .workdirs import HeldDir

__all__ = [
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "disk_over",
    "isolation_level",
    "run_sandboxed",
]

F_SETPIPE_SZ = 1031  # linux/fcntl.h
#: World-writable scratch dirs: each gets a fresh tmpfs in the namespace levels.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
#: Levels a user without root may ask for, strongest first (see the module doc).
USER_LEVELS = (USER_NAMESPACES, BUBBLEWRAP, NONE)
ISOLATION_ENV = "AUTOCOMP_SANDBOX_ISOLATION"
SUPERVISOR = Path(supervisor.__file__)

#: Seconds to wait for the supervisor to report after the candidate was killed.
KILL_GRACE_S = 2.0
#: Seconds to keep draining pipes after the supervisor reported (descendants may lag).
DRAIN_GRACE_S = 1.0
#: Seconds between looks at how much a run's work dir holds (``SandboxLimits.disk_mb``).
DISK_LOOK_S = 0.5
#: Per-run uids are drawn from [UID_BASE, UID_BASE + UID_SPAN): far from real accounts
#: and from the usual subordinate-uid ranges of rootless containers.
UID_BASE, UID_SPAN = 1_500_000_000, 1 << 24

_uids_in_use: set[int] = set()
_uids_lock = threading.Lock()


class SandboxError(BackendError):
    """The sandbox itself could not set up or run the program (not the program's fault)."""


@dataclass
class SandboxLimits:
    wall_s: float = 60.0  # hard wall clock; the whole process group is SIGKILLed at the limit
    cpu_s: int | None = None  # RLIMIT_CPU (default: wall_s rounded up)
    memory_mb: int | None = 4096  # RLIMIT_AS
    file_size_mb: int = 256  # RLIMIT_FSIZE
    max_processes: int | None = 64  # RLIMIT_NPROC (per user: see the module doc)
    max_output_bytes: int = 1_000_000  # per stream; more is drained and discarded
    # the most the work dir may hold, and the most entries (files, dirs, links) in it: looked
    # at every DISK_LOOK_S, the program killed beyond (RLIMIT_FSIZE bounds one file only)
    disk_mb: int = 4096
    disk_entries: int = 100_000
    # the size of each fresh tmpfs over a scratch dir (/tmp, /dev/shm, ...): memory, which
    # no other limit bounds (namespace levels)
    scratch_mb: int = 256
    network: bool = False  # False: a fresh network namespace where the OS allows
    drop_privileges: bool = True  # when root: run as a fresh unprivileged uid


@dataclass
class SandboxResult:
    returncode: int | None  # exit code; None when killed by a signal or never reaped
    stdout: str
    stderr: str
    timed_out: bool
    signal: int | None  # the signal that ended the program (SIGKILL after a timeout)
    stdout_truncated: bool
    stderr_truncated: bool
    wall_s: float
    workdir: Path
    network_isolated: bool = False  # the program ran in a fresh network namespace
    isolation: str = NONE  # the isolation level it ran under (see the module doc)
    pid: int | None = None  # the program's pid in the engine's view; also its process group
    uid: int | None = None  # the uid it ran as
    stdout_bytes: int = 0  # bytes the program wrote, kept or not
    stderr_bytes: int = 0
    disk_exceeded: str = ""  # why it was killed for what its work dir held ("" if not)

    @property
    def isolated(self) -> bool:
        """It ran in some isolation from the engine's user and files (any level but none)."""
        return self.isolation != NONE

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.disk_exceeded


# ---------------------------------------------------------------- the run plan


def _allocate_uid() -> int:
    with _uids_lock:
        while True:
            uid = UID_BASE + random.randrange(UID_SPAN)
            if uid not in _uids_in_use:
                _uids_in_use.add(uid)
                return uid


def _release_uid(uid: int | None) -> None:
    with _uids_lock:
        _uids_in_use.discard(uid)


def _blocked_covers(paths: list[str]) -> list[tuple[str, list[str], str]]:
    """Covers for the first ancestor of each path that other users cannot enter.

    Each cover is (dir, entries to keep visible, tmpfs options): the dir is replaced by an
    empty read-only-for-others tmpfs that shows only the entries leading to the paths.
    """
    found: dict[str, set[str]] = {}
    for path in paths:
        parts = Path(path).parts
        for i in range(2, len(parts)):
            ancestor = os.path.join(*parts[:i])
            try:
                if os.stat(ancestor).st_mode & stat.S_IXOTH:
                    continue
            except OSError:
                break
            found.setdefault(ancestor, set()).add(os.path.join(ancestor, parts[i]))
            break
    return [(d, sorted(e), "mode=0755,size=64k") for d, e in found.items()]


def _engine_paths() -> list[str]:
    """Where the engine's own Python lives: its environment and import path. A harness
    run with the engine's interpreter needs them, wherever the checkout happens to be
    (a CI clone under /tmp, a venv under /root)."""
    paths = {os.path.realpath(sys.prefix)}
    paths.update(os.path.realpath(p) for p in sys.path if p and os.path.isdir(p))
    return sorted(paths)


def _outermost(paths: list[str]) -> list[str]:
    """The paths, minus any that lies inside another (binding both would collide)."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept


def _scratch_covers(workdir: Path, limits: SandboxLimits) -> list[tuple[str, list[str], str]]:
    """Fresh tmpfs over the world-writable scratch dirs, keeping the work dir (and the
    engine's environment, if it lives there) visible.

    Whatever the program writes there vanishes with its mount namespace.
    """
    covers = []
    visible = [os.path.realpath(workdir), *_engine_paths()]
    for scratch in SCRATCH_DIRS:
        if not os.path.isdir(scratch) or os.path.islink(scratch):
            continue
        real = os.path.realpath(scratch)
        keep = _outermost([p for p in visible if p.startswith(real + os.sep)])
        covers.append((real, keep, f"mode=1777,size={limits.scratch_mb}m"))
    return covers


def _hidden_dirs(hidden: list[Path], needed: list[str]) -> list[str]:
    """The dirs to show empty to the program: existing ones, outside the scratch dirs (their
    fresh tmpfs hides them already) unless inside what the program needs, which is bound back
    over that tmpfs (a checkout under /tmp holding a cache). One that holds what the program
    needs is an error."""
    scratch = [os.path.realpath(d) for d in SCRATCH_DIRS]
    found = []
    for path in hidden:
        real = os.path.realpath(path)
        bound_back = any(real.startswith(p + os.sep) for p in needed)
        in_scratch = any(real.startswith(d + os.sep) for d in scratch)
        if not os.path.isdir(real) or (in_scratch and not bound_back):
            continue
        inside = [p for p in needed if p == real or p.startswith(real + os.sep)]
        if inside:
            raise SandboxError(f"cannot hide {real}: the program needs {inside[0]}, inside it")
        found.append(real)
    return found


def _executable_paths(argv0: str, env: dict[str, str]) -> list[str]:
    """The program and the interpreter running us (harnesses commonly use it), resolved."""
    paths = [os.path.realpath(sys.executable)]
    found = shutil.which(argv0, path=env.get("PATH")) if os.sep not in argv0 else argv0
    if found:
        paths.append(os.path.realpath(found))
    return paths


# ---------------------------------------------------------------- isolation


def isolation_level() -> str:
    """The isolation candidates get on this machine: the strongest level that works here
    (probed once per process), or the weaker one ``AUTOCOMP_SANDBOX_ISOLATION`` asks for."""
    return _probed(os.environ.get(ISOLATION_ENV, "auto"), os.geteuid() == 0)


@functools.cache
def _probed(wanted: str, is_root: bool) -> str:
    order = [NAMESPACES, UID_ONLY] if is_root else list(USER_LEVELS)
    if wanted != "auto":
        if wanted not in order:
            raise SandboxError(
                f"{ISOLATION_ENV}={wanted!r}: choose auto or one of "
                f"{', '.join(order)} ({'root' if is_root else 'no root'} here)"
            )
        order = order[order.index(wanted) :]
    for level in order:
        if level in (UID_ONLY, NONE) or _probe(level):
            return level
    raise AssertionError("unreachable: the last level needs no probe")


def _probe(level: str) -> bool:
    bwrap = shutil.which("bwrap") or ""
    if level == BUBBLEWRAP and not bwrap:
        return False
    try:
        done = subprocess.run(
            [*_supervisor_argv(), "--probe", level, bwrap], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _supervisor_argv() -> list[str]:
    """A fresh interpreter running the supervisor: isolated from the environment
    (``-I``), no site packages (``-S``), no bytecode written (``-B``)."""
    return [sys.executable, "-I", "-S", "-B", str(SUPERVISOR)]


def _bwrap_argv(workdir: Path, limits: SandboxLimits, hidden: list[str]) -> list[str]:
    """``bwrap`` building the namespace levels' sandbox around the program."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap was found at start but bwrap is gone")
    args = supervisor.bwrap_namespaces(bwrap, limits.network)
    for folder, keep, _ in _scratch_covers(workdir, limits):
        args += ["--size", str(limits.scratch_mb << 20), "--tmpfs", folder]
        for path in keep:
            args += ["--ro-bind", path, path]
    for folder in hidden:
        args += ["--size", "4096", "--perms", "0555", "--tmpfs", folder]
    work = os.path.realpath(workdir)
    return [*args, "--bind", work, work, "--chdir", str(workdir), "--"]


def _find_program(argv0: str, env: dict[str, str], workdir: Path) -> None:
    """Raise ``FileNotFoundError``/``PermissionError`` now for a program that cannot be
    started, as ``subprocess`` would (the exec happens far from here)."""
    path = workdir / argv0 if os.sep in argv0 else shutil.which(argv0, path=env.get("PATH"))
    if path is None or not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv0)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), argv0)


# ---------------------------------------------------------------- in the engine


class _PipeReader(abc.ABC):
    """A pipe read whenever it is readable (``_on_readable``), never blocking the loop;
    ``closed`` is set once it is closed, at its end or by ``close``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop, self.fd = loop, fd
        self.closed = anyio.Event()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._on_readable)

    @abc.abstractmethod
    def _on_readable(self) -> None:
        """Read what the pipe holds (called by the loop whenever it is readable)."""

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        self.closed.set()


class _CappedReader(_PipeReader):
    """Keeps the first ``cap`` bytes of a pipe, counts the rest."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0
        with contextlib.suppress(OSError):  # bigger pipe: fewer wake-ups for a flood
            fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
        super().__init__(loop, fd)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)


class _StatusReader(_PipeReader):
    """Parses the supervisor's status lines as they arrive; ``closed``: the supervisor exited."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.buffer = b""
        self.pid: int | None = None
        self.level = NONE  # the isolation the supervisor set up
        self.ended: tuple[str, int] | None = None  # ("exit", code) or ("signal", number)
        self.exec_errno: int | None = None  # the program could not be executed
        self.errors: list[str] = []
        super().__init__(loop, fd)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        if not data:
            self.close()
            return
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            kind, _, value = line.decode(errors="replace").partition(" ")
            if kind == "pid":
                self.pid = int(value)
            elif kind == "level":
                self.level = value
            elif kind == "execfail":
                self.exec_errno = int(value)
            elif kind in ("exit", "signal"):
                self.ended = (kind, int(value))
            elif kind == "error":
                self.errors.append(value)


def _base_env() -> dict[str, str]:
    # Never the engine's environment: it may hold API keys.
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    for root, dirs, names in os.walk(top):
        for path in (root, *(os.path.join(root, n) for n in (*dirs, *names))):
            with contextlib.suppress(OSError):
                os.lchown(path, uid, gid)


def _prepare_workdir(workdir: Path, files: dict[str, str | bytes] | None, uid: int | None) -> None:
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    for name, content in (files or {}).items():
        path = (workdir / name).resolve()
        if workdir.resolve() not in path.parents:
            raise ValueError(f"sandbox file {name!r} lies outside the work dir")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
    if uid is not None:
        _chown_tree(workdir, uid, uid)


async def run_sandboxed(
    argv: list[str],
    *,
    limits: SandboxLimits | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    files: dict[str, str | bytes] | None = None,
    keep: bool = False,
    hidden: Sequence[Path] = (),
    preload: PreloadServer | None = None,
) -> SandboxResult:
    """Run ``argv`` isolated and limited; return how it ended. Never waits past the limit.

    ``cwd`` None: a private temp dir is created, ``files`` are written into it, and it is
    removed afterwards unless ``keep``. A given ``cwd`` is used as is (and handed to the
    sandbox uid when privileges are dropped). ``env`` is added to a minimal environment
    (PATH, LANG); HOME and TMPDIR always point inside the work dir. Raises
    ``FileNotFoundError``/``PermissionError`` when ``argv[0]`` cannot be executed and
    ``SandboxError`` when the sandbox cannot be set up.

    ``hidden``: dirs the program must not read (a harness's reference outputs), shown empty
    at the namespace and bubblewrap levels; at ``uid`` only their permissions keep the per-run
    uid out, and at ``none`` nothing does.

    ``preload``: a ``python -m MODULE`` argv it serves is forked from that server, its
    imports done, instead of a fresh interpreter (not under bubblewrap; see
    ``preload.py``). The isolation and limits are the same either way.
    """
    if not argv:
        raise ValueError("run_sandboxed needs a non-empty argv")
    limits = limits or SandboxLimits()
    if limits.wall_s <= 0:
        raise ValueError(f"SandboxLimits.wall_s must be positive, got {limits.wall_s}")
    level = await anyio.to_thread.run_sync(isolation_level)
    # a dir of ours is held while the run lives (a killed engine's is swept: see workdirs);
    # one to keep is the caller's, and never swept
    held = HeldDir("autocomp-sbx-") if cwd is None and not keep else None
    if held is not None:
        workdir = held.path
    else:
        workdir = Path(tempfile.mkdtemp(prefix="autocomp-sbx-")) if cwd is None else Path(cwd)
    uid = _allocate_uid() if level in (NAMESPACES, UID_ONLY) and limits.drop_privileges else None
    try:
        _prepare_workdir(workdir, files, uid)
        full_env = {
            **_base_env(),
            **(env or {}),
            "HOME": str(workdir),
            "TMPDIR": str(workdir / "tmp"),
        }
        _find_program(argv[0], full_env, workdir)
        reach = [
            *_executable_paths(argv[0], full_env),
            os.path.realpath(workdir),
            *_engine_paths(),
        ]
        hide = _hidden_dirs(list(hidden), reach)
        if level == BUBBLEWRAP:
            argv = [*_bwrap_argv(workdir, limits, hide), *argv]
        plan = _supervisor_plan(level, uid, workdir, limits, reach, hide)
        if preload is not None and (level == BUBBLEWRAP or not preload.serves(argv, full_env)):
            preload = None  # (bubblewrap execs the program)
        return await _run(argv, plan, limits, workdir, full_env, stdin, preload)
    finally:
        _release_uid(uid)
        if held is not None:
            held.release()
        elif uid is not None:  # hand the caller's dir (and what the program made) back
            _chown_tree(workdir, os.geteuid(), os.getegid())


def _supervisor_plan(
    level: str,
    uid: int | None,
    workdir: Path,
    limits: SandboxLimits,
    reach: list[str],
    hide: list[str],
) -> dict:
    """What the supervisor sets up (see ``supervisor.py``): the level, the per-run uid, the
    tmpfs covers (scratch dirs, dirs the uid cannot enter, hidden dirs) and the rlimits."""
    namespaces = level in (NAMESPACES, USER_NAMESPACES)
    covers: list[tuple[str, list[str], str]] = []
    if namespaces:
        covers = _scratch_covers(workdir, limits)
    if level == NAMESPACES and uid is not None:
        covers += _blocked_covers(reach)
    if namespaces:
        covers += [(folder, [], "mode=0555,size=4k") for folder in hide]
    return {
        "level": level,
        "network": limits.network,
        "uid": uid,
        "covers": covers,
        # the program writes only its work dir and scratch, whatever its uid may write
        "writable": os.path.realpath(workdir) if namespaces else None,
        "engine_pid": os.getpid(),
        "limits": {
            "cpu_s": max(1, limits.cpu_s if limits.cpu_s is not None else math.ceil(limits.wall_s)),
            "memory_mb": limits.memory_mb,
            "file_size_mb": limits.file_size_mb,
            "max_processes": limits.max_processes,
        },
    }


async def _run(
    argv: list[str],
    plan: dict,
    limits: SandboxLimits,
    workdir: Path,
    env: dict[str, str],
    stdin: bytes | None,
    preload: PreloadServer | None = None,
) -> SandboxResult:
    loop = asyncio.get_running_loop()  # before anything is opened or started
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    plan["status_fd"] = status_w
    try:
        with _stdin_file(stdin) as stdin_file:
            started = time.monotonic()
            proc = await _launch(
                argv, plan, workdir, env, stdin_file, preload, (out_w, err_w, status_w)
            )
    except BaseException:
        for fd in (status_r, status_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    for fd in (status_w, out_w, err_w):
        os.close(fd)
    out = _CappedReader(loop, out_r, limits.max_output_bytes)
    err = _CappedReader(loop, err_r, limits.max_output_bytes)
    status = _StatusReader(loop, status_r)
    disk = _DiskWatch(workdir, limits)
    try:
        async with anyio.create_task_group() as watching:
            watching.start_soon(disk.watch, status, proc)
            timed_out, wall, supervisor_code = await _await_end(
                proc, status, out, err, started, limits.wall_s
            )
            watching.cancel_scope.cancel()
        if not disk.exceeded:  # (one look more: a run may end between two)
            disk.exceeded = await anyio.to_thread.run_sync(disk_over, workdir, limits)
    finally:
        for reader in (out, err, status):
            reader.close()
    returncode, signum = _ending(argv[0], status, timed_out, supervisor_code)
    level = status.level
    if level == NAMESPACES and plan["uid"] is None:
        level = "namespaces"  # root keeping its privileges (drop_privileges=False)
    return SandboxResult(
        returncode=returncode,
        stdout=_relative(bytes(out.kept).decode("utf-8", "replace"), workdir),
        stderr=_relative(bytes(err.kept).decode("utf-8", "replace"), workdir),
        timed_out=timed_out,
        signal=signum,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        wall_s=wall,
        workdir=workdir,
        network_isolated=status.level in (NAMESPACES, USER_NAMESPACES, BUBBLEWRAP)
        and not limits.network,
        isolation=level,
        pid=status.pid,
        uid=plan["uid"] if plan["uid"] is not None else os.geteuid(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        disk_exceeded=disk.exceeded,
    )


def _run_processes(pid: int) -> list[str]:
    """The processes (their ``/proc`` entries' names) of the run whose program is ``pid``:
    its process group, and every process in a PID namespace of one of the group's where that
    is not the engine's (a process that left the group with ``setsid`` is still there: the
    eleventh red team held 512 MB in an unlinked file from such a child). Under bubblewrap
    ``pid`` is ``bwrap`` itself, outside the namespace its child made."""

    def namespace(name: str) -> str:
        try:
            return os.readlink(f"/proc/{name}/ns/pid")
        except OSError:
            return ""

    processes = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    group = int(f.read().rpartition(")")[2].split()[2])
            except (OSError, ValueError, IndexError):
                continue
            processes.append((entry.name, group, namespace(entry.name)))
    engine = namespace("self")
    spaces = {space for _, group, space in processes if group == pid} - {engine, ""}
    return [name for name, group, space in processes if group == pid or space in spaces]


def _unlinked_bytes(pid: int) -> int:
    """Bytes on disk of the regular files without a name that the processes of the run
    whose program is ``pid`` hold open (what ``/proc`` lets this process see of them)."""
    used, seen = 0, set()
    for name in _run_processes(pid):
        try:
            fds = os.scandir(f"/proc/{name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    info = os.stat(fd.path)
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and key not in seen:
                    seen.add(key)
                    used += info.st_blocks * 512
    return used


class _DiskWatch:
    """Kills a run whose work dir holds more than its limits allow (``disk_over``): a program
    that fills the disk harms every run on the machine and the engine's own store, and that
    must be its failure. ``exceeded`` says which limit, once it has."""

    def __init__(self, workdir: Path, limits: SandboxLimits) -> None:
        self.workdir, self.limits = workdir, limits
        self.exceeded = ""

    async def watch(self, status: _StatusReader, proc: subprocess.Popen | PreloadedRun) -> None:
        while not status.closed.is_set():
            await anyio.sleep(DISK_LOOK_S)
            self.exceeded = await anyio.to_thread.run_sync(
                disk_over, self.workdir, self.limits, status.pid
            )
            if self.exceeded:
                await _kill_candidate(status, proc)
                return


def disk_over(workdir: Path, limits: SandboxLimits, pid: int | None = None) -> str:
    """What ``workdir`` holds beyond ``limits.disk_mb`` or ``limits.disk_entries`` ("" where
    nothing): more than that many entries, or more bytes on disk, counting the files that
    the processes of the run whose program is ``pid`` (its process group and PID namespace)
    hold open with no name left (a file unlinked while open fills the disk as well, and no
    listing shows it)."""
    used, entries = _unlinked_bytes(pid) if pid is not None else 0, 0
    folders = [str(workdir)]
    while folders:
        try:
            listing = os.scandir(folders.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                entries += 1
                if entries > limits.disk_entries:
                    return f"its work dir holds more than {limits.disk_entries} entries"
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    used += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue
    if used > limits.disk_mb << 20:
        return f"its work dir holds {used >> 20} MB, more than its {limits.disk_mb} MB"
    return ""


@contextlib.contextmanager
def _stdin_file(stdin: bytes | None) -> Iterator[IO[bytes] | None]:
    """The program's stdin as a file, not a pipe: nothing to feed while the program runs."""
    if stdin is None:
        yield None
        return
    with tempfile.TemporaryFile() as file:
        file.write(stdin)
        file.seek(0)
        yield file


async def _launch(
    argv: list[str],
    plan: dict,
    workdir: Path,
    env: dict[str, str],
    stdin_file: IO[bytes] | None,
    preload: PreloadServer | None,
    pipes: tuple[int, int, int],
) -> subprocess.Popen | PreloadedRun:
    """Start the supervisor: forked by the preload server when it can, else execed with a
    fresh interpreter. ``pipes``: the write ends of the stdout, stderr and status pipes."""
    out_w, err_w, status_w = pipes
    if preload is not None:
        stdin_fd = stdin_file.fileno() if stdin_file is not None else os.open(os.devnull, 0)
        try:  # None: the server could not fork it, and a fresh interpreter runs it
            proc = await preload.launch(
                plan, argv, env, str(workdir), (stdin_fd, out_w, err_w, status_w)
            )
        finally:
            if stdin_file is None:
                os.close(stdin_fd)
        if proc is not None:
            return proc
    return subprocess.Popen(  # noqa: ASYNC220 - returns at once: fork and exec, no Python between
        [*_supervisor_argv(), json.dumps(plan), "--", *argv],
        stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
        stdout=out_w,
        stderr=err_w,
        cwd=workdir,
        env=env,
        start_new_session=True,
        pass_fds=(status_w,),
    )


async def _await_end(
    proc: subprocess.Popen | PreloadedRun,
    status: _StatusReader,
    out: _CappedReader,
    err: _CappedReader,
    started: float,
    wall_s: float,
) -> tuple[bool, float, int | None]:
    """Wait for the supervisor's report up to the wall limit, killing the program there;
    reap the supervisor and drain the output still in flight. Returns (timed out, wall
    seconds, the supervisor's exit code). Cancelled, it kills without waiting."""
    timed_out = False
    try:
        with anyio.move_on_after(max(0.0, started + wall_s - time.monotonic())):
            await status.closed.wait()
        if not status.closed.is_set():
            timed_out = True
            await _kill_candidate(status, proc)
        wall = time.monotonic() - started
        supervisor_code = await _reap(proc, KILL_GRACE_S)
        # Output still in flight after the program ended: read it briefly, then stop.
        with anyio.move_on_after(DRAIN_GRACE_S):
            await out.closed.wait()
            await err.closed.wait()
    except BaseException:  # cancelled (or worse): the program must not outlive the call
        _kill_now(status, proc)
        raise
    return timed_out, wall, supervisor_code


def _ending(
    argv0: str, status: _StatusReader, timed_out: bool, supervisor_code: int | None
) -> tuple[int | None, int | None]:
    """How the program ended: (exit code, signal). Raises when the sandbox failed to set it
    up (``SandboxError``) or to execute it (``OSError``)."""
    if status.errors and any(
        e.startswith("setup") or e.startswith("supervisor") for e in status.errors
    ):
        raise SandboxError(f"sandbox for {argv0!r} failed: {'; '.join(status.errors)}")
    if status.exec_errno is not None:
        raise OSError(status.exec_errno, os.strerror(status.exec_errno), argv0)
    if status.ended is not None:
        kind, value = status.ended
        return (value, None) if kind == "exit" else (None, value)
    if timed_out:
        return None, signal.SIGKILL
    if supervisor_code is not None:
        raise SandboxError(
            f"sandbox supervisor for {argv0!r} ended without a report (code {supervisor_code})"
        )
    return None, None


def _relative(text: str, workdir: Path) -> str:
    """Paths inside the private work dir, written relative to it: the dir's name is random,
    and compiler errors and tracebacks read the same from run to run without it."""
    for form in {str(workdir), os.path.realpath(workdir)}:
        text = text.replace(form + os.sep, "").replace(form, ".")
    return text


async def _kill_candidate(status: _StatusReader, proc: subprocess.Popen | PreloadedRun) -> None:
    """SIGKILL the candidate's process group; the supervisor then reaps and reports."""
    if status.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(status.pid, signal.SIGKILL)
        with anyio.move_on_after(KILL_GRACE_S):
            await status.closed.wait()
    if not status.closed.is_set():  # no report: take the supervisor down too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _kill_now(status: _StatusReader, proc: subprocess.Popen | PreloadedRun) -> None:
    """Kill without waiting. The supervisor reaps the program and exits; ``subprocess``
    reaps the supervisor later (at the next Popen), or the preload server that forked it."""
    if status.pid is None and status.fd >= 0:
        status._on_readable()  # the pid line may be in the pipe, unread
    target = status.pid if status.pid is not None else proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(target, signal.SIGKILL)


async def _reap(proc: subprocess.Popen | PreloadedRun, grace_s: float) -> int | None:
    """Collect the supervisor's exit status, waiting at most ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        code = proc.poll()
        if code is not None or time.monotonic() >= deadline:
            return code
        await anyio.sleep(0.005)
