"""Running untrusted programs: process isolation, hard limits, bounded output.

``run_sandboxed`` starts a program and always comes back: at the wall-clock limit the
program's whole process group is SIGKILLed and the call returns without waiting on a
child that does not die. Output is read as it comes, kept up to a cap per stream and the
rest read and thrown away, so a program printing a gigabyte fills neither memory nor disk.

How a run is laid out (Linux)::

    engine ─fork─ supervisor ─fork─ init (session leader) ─fork─ program (exec of argv)

The supervisor and the init are forked from the engine in ``preexec_fn`` and never exec:
they are our code. The supervisor waits for the init and writes how the run ended to a
status pipe the program never holds. The init is PID 1 of the program's PID namespace:
it sets up mounts, starts the program, reaps every orphan, and reports the program's exit.
At the wall limit the engine SIGKILLs the init's process group; the init's death makes the
kernel kill and reap everything left in the namespace, even processes that left the group
with ``setsid``. Nothing is left as a zombie, which matters where PID 1 of the machine does
not reap orphans (containers, microVMs) and zombies would keep the process group alive.

When the engine runs as root (and the OS allows it) the candidate also gets:

* the PID namespace above, with its own ``/proc``;
* a fresh network namespace (no interfaces up, not even loopback) unless
  ``SandboxLimits.network`` is true;
* a private mount namespace in which ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock``
  are fresh tmpfs (showing only the work dir), so scratch files vanish with the run;
* with ``drop_privileges`` (default): a fresh unprivileged uid/gid per run that owns only
  the work dir, so writes elsewhere fail with EACCES and ``RLIMIT_NPROC`` (which the kernel
  counts per user) bounds exactly this run's processes. If the interpreter lives under a
  directory other users cannot enter (``/root`` with mode 0700, typical for pyenv), that
  directory is replaced, inside the sandbox only, by an empty one that shows just the entry
  leading to the interpreter.

Without root (or where ``unshare`` is refused) there are no namespaces and no init: the
supervisor starts the program directly (``network_isolated`` is False in the result).
Without root the program keeps the engine's uid, and ``RLIMIT_NPROC`` counts all of that
user's processes, so ``max_processes`` must leave room for them (root is not bound by
it at all: with ``drop_privileges=False`` a fork bomb is stopped only by the wall limit).
The supervisor is then a child subreaper that kills the program's process group when the
program ends and reaps the orphans; a process that left the group with ``setsid`` can
outlive the run in that mode. Root without namespaces still drops to the per-run uid, so
the program must then be reachable by other users.
"""
from __future__ import annotations

# asyncio for one thing anyio lacks: callbacks that read a pipe whenever it is readable
# (loop.add_reader), so output is drained while the run awaits its deadline.
import asyncio
import contextlib
import ctypes
import fcntl
import math
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio

__all__ = ["SandboxError", "SandboxLimits", "SandboxResult", "private_workdir", "remove_tree", "run_sandboxed"]

# Linux constants (linux/sched.h, linux/mount.h, linux/prctl.h).
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
OPEN_TREE_CLONE, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 1, 0x8000, 0x4, -100
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # same number on x86_64 and arm64
F_SETPIPE_SZ = 1031

#: Seconds to wait for the supervisor to report after the candidate was killed.
KILL_GRACE_S = 2.0
#: Seconds to keep draining pipes after the supervisor reported (descendants may lag).
DRAIN_GRACE_S = 1.0
#: Per-run uids are drawn from [UID_BASE, UID_BASE + UID_SPAN): far from real accounts
#: and from the usual subordinate-uid ranges of rootless containers.
UID_BASE, UID_SPAN = 1_500_000_000, 1 << 24

# Loaded once here: the forked supervisor must not dlopen (another thread may hold its lock).
_libc = ctypes.CDLL(None, use_errno=True)
_uids_in_use: set[int] = set()
_uids_lock = threading.Lock()


class SandboxError(RuntimeError):
    """The sandbox itself could not set up or run the program (not the program's fault)."""


@dataclass
class SandboxLimits:
    wall_s: float = 60.0  # hard wall clock; the whole process group is SIGKILLed at the limit
    cpu_s: int | None = None  # RLIMIT_CPU (default: wall_s rounded up)
    memory_mb: int | None = 4096  # RLIMIT_AS
    file_size_mb: int = 256  # RLIMIT_FSIZE
    max_processes: int | None = 64  # RLIMIT_NPROC (per user: see the module doc)
    max_output_bytes: int = 1_000_000  # per stream; more is drained and discarded
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
    pid: int | None = None  # the program's pid in the engine's view; also its process group
    uid: int | None = None  # the uid it ran as
    stdout_bytes: int = 0  # bytes the program wrote, kept or not
    stderr_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


@contextlib.contextmanager
def private_workdir(prefix: str) -> Iterator[Path]:
    """A fresh temp dir (mode 0700) that is removed, whatever its content, on exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """Remove a work dir whatever the program did to it (read-only dirs included)."""
    def make_writable_and_retry(func, target, _exc):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)

    shutil.rmtree(path, onerror=make_writable_and_retry)


# ---------------------------------------------------------------- the run plan


@dataclass
class _Plan:
    """Everything the forked supervisor needs, computed before the fork."""

    limits: SandboxLimits
    status_fd: int
    namespaces: int  # CLONE_* flags to try (0: none)
    uid: int | None  # drop to this uid/gid (None: keep ours)
    engine_pid: int = 0
    #: (dir, entries kept visible, tmpfs options): mounts made inside the mount namespace
    covers: list[tuple[str, list[str], str]] = field(default_factory=list)


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
    for scratch in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        if not os.path.isdir(scratch) or os.path.islink(scratch):
            continue
        real = os.path.realpath(scratch)
        keep = _outermost([p for p in visible if p.startswith(real + os.sep)])
        covers.append((real, keep, f"mode=1777,size={limits.file_size_mb}m"))
    return covers


def _executable_paths(argv0: str, env: dict[str, str]) -> list[str]:
    """The program and the interpreter running us (harnesses commonly use it), resolved."""
    paths = [os.path.realpath(sys.executable)]
    found = shutil.which(argv0, path=env.get("PATH")) if os.sep not in argv0 else argv0
    if found:
        paths.append(os.path.realpath(found))
    return paths


# ---------------------------------------------------------------- in the forked processes
# Everything below runs after fork in a copy of the engine: only plain system calls, and
# every path ends in os._exit or in returning to exec.


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _status_line(wait_status: int) -> bytes:
    if os.WIFSIGNALED(wait_status):
        return f"signal {os.WTERMSIG(wait_status)}\n".encode()
    return f"exit {os.WEXITSTATUS(wait_status)}\n".encode()


def _detach_fds(keep: int) -> None:
    """Drop everything inherited from the engine (pipes, the exec error pipe) but ``keep``."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)


def _supervise(plan: _Plan) -> None:
    """Runs in the forked supervisor. Returns only in the candidate, which then execs."""
    status = plan.status_fd
    try:
        isolated = False
        if plan.namespaces:
            try:
                _check(_libc.unshare(plan.namespaces), "unshare")
                isolated = True
            except OSError:
                pass
        if not isolated:
            _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != plan.engine_pid:  # the engine is already gone
            os._exit(70)
        me = os.getpid()
        net = isolated and bool(plan.namespaces & CLONE_NEWNET)
        os.write(status, f"isolated {int(isolated)} {int(net)}\n".encode())
        child = os.fork()
        if child == 0:
            os.setsid()  # the process group the engine kills at the wall limit
            if isolated:
                _init_namespace(plan)
            else:
                _become_candidate(plan, parent=me)
            return
        os.write(status, f"pid {child}\n".encode())
        _detach_fds(status)
        _, wait_status = os.waitpid(child, 0)
        if isolated:
            # The namespace's init reported the program's end and left with 0; anything
            # else means it was killed (the wall limit) or failed.
            if wait_status != 0:
                os.write(status, _status_line(wait_status))
        else:  # no PID namespace: kill what is left of the group and reap the orphans
            with contextlib.suppress(OSError):
                os.killpg(child, signal.SIGKILL)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        time.sleep(0.01)
                except ChildProcessError:
                    break
            os.write(status, _status_line(wait_status))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and leave, never return into exec
        with contextlib.suppress(BaseException):
            os.write(status, f"error supervisor: {exc}\n".encode())
        os._exit(70)


def _init_namespace(plan: _Plan) -> None:
    """PID 1 of the program's namespaces: set up mounts, start the program, reap, report.

    The program is not PID 1 itself because the kernel drops signals a PID 1 sends itself
    (``abort``, ``raise``). When this process exits the kernel kills the whole namespace.
    """
    status = plan.status_fd
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # fork cleared the supervisor's
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        with contextlib.suppress(OSError):  # a /proc that shows only this namespace
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        _cover(plan.covers)
        program = os.fork()
        if program == 0:
            _become_candidate(plan, parent=1)
            return
        _detach_fds(status)
        while True:  # reap everything; orphans of the namespace land here
            pid, wait_status = os.wait()
            if pid == program:
                break
        os.write(status, _status_line(wait_status))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        with contextlib.suppress(BaseException):
            os.write(status, f"error setup: {exc}\n".encode())
        os._exit(70)


def _become_candidate(plan: _Plan, parent: int) -> None:
    """Runs in the program's process before exec: limits, then drop privileges."""
    status = plan.status_fd
    try:
        _set_limits(plan.limits)
        if plan.uid is not None:
            os.setgroups([])
            os.setresgid(plan.uid, plan.uid, plan.uid)
            os.setresuid(plan.uid, plan.uid, plan.uid)
        # Changing uid clears the parent-death signal: set it now, and check the parent lives.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(70)
        os.close(status)
    except BaseException as exc:  # noqa: BLE001
        with contextlib.suppress(BaseException):
            os.write(status, f"error setup: {exc}\n".encode())
        os._exit(127)


def _cover(covers: list[tuple[str, list[str], str]]) -> None:
    """Mount an empty tmpfs over each dir, then put back the entries that must stay visible."""
    for folder, entries, options in covers:
        trees = []
        for entry in entries:
            fd = _libc.syscall(SYS_OPEN_TREE, AT_FDCWD, entry.encode(),
                               OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC)
            _check(0 if fd >= 0 else -1, f"open_tree {entry}")
            trees.append((entry, fd))
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, options)
        for entry, fd in trees:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.mkdir(entry)
            else:
                os.close(os.open(entry, os.O_CREAT | os.O_WRONLY, 0o644))
            _check(_libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, entry.encode(),
                                 MOVE_MOUNT_F_EMPTY_PATH), f"move_mount {entry}")
            os.close(fd)


def _set_limits(limits: SandboxLimits) -> None:
    def cap(kind: int, value: int) -> None:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    cpu = max(1, limits.cpu_s if limits.cpu_s is not None else math.ceil(limits.wall_s))
    cap(resource.RLIMIT_CPU, cpu)  # soft == hard: the kernel sends SIGKILL at the limit
    if limits.memory_mb is not None:
        cap(resource.RLIMIT_AS, limits.memory_mb << 20)
    cap(resource.RLIMIT_FSIZE, limits.file_size_mb << 20)
    cap(resource.RLIMIT_CORE, 0)
    if limits.max_processes is not None:
        cap(resource.RLIMIT_NPROC, limits.max_processes)


# ---------------------------------------------------------------- in the engine


class _CappedReader:
    """Reads a pipe without blocking the loop; keeps the first ``cap`` bytes, counts the rest."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int) -> None:
        self.loop, self.fd, self.cap = loop, fd, cap
        self.kept = bytearray()
        self.total = 0
        self.done = anyio.Event()  # the pipe closed
        os.set_blocking(fd, False)
        with contextlib.suppress(OSError):  # bigger pipe: fewer wake-ups for a flood
            fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
        loop.add_reader(fd, self._on_readable)

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

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        self.done.set()

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)


class _StatusReader:
    """Parses the supervisor's status lines as they arrive."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop, self.fd = loop, fd
        self.buffer = b""
        self.pid: int | None = None
        self.isolated = self.network_isolated = False
        self.ended: tuple[str, int] | None = None  # ("exit", code) or ("signal", number)
        self.errors: list[str] = []
        self.finished = anyio.Event()  # the supervisor exited (the pipe closed)
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._on_readable)

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
            elif kind == "isolated":
                iso, net = value.split()
                self.isolated, self.network_isolated = iso == "1", net == "1"
            elif kind in ("exit", "signal"):
                self.ended = (kind, int(value))
            elif kind == "error":
                self.errors.append(value)

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        self.finished.set()


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


async def run_sandboxed(argv: list[str], *, limits: SandboxLimits | None = None,
                        cwd: Path | None = None, env: dict[str, str] | None = None,
                        stdin: bytes | None = None, files: dict[str, str | bytes] | None = None,
                        keep: bool = False) -> SandboxResult:
    """Run ``argv`` isolated and limited; return how it ended. Never waits past the limit.

    ``cwd`` None: a private temp dir is created, ``files`` are written into it, and it is
    removed afterwards unless ``keep``. A given ``cwd`` is used as is (and handed to the
    sandbox uid when privileges are dropped). ``env`` is added to a minimal environment
    (PATH, LANG); HOME and TMPDIR always point inside the work dir. Raises
    ``FileNotFoundError``/``PermissionError`` when ``argv[0]`` cannot be executed and
    ``SandboxError`` when the sandbox cannot be set up.
    """
    if not argv:
        raise ValueError("run_sandboxed needs a non-empty argv")
    limits = limits or SandboxLimits()
    if limits.wall_s <= 0:
        raise ValueError(f"SandboxLimits.wall_s must be positive, got {limits.wall_s}")
    owned = cwd is None
    workdir = Path(tempfile.mkdtemp(prefix="autocomp-sbx-")) if cwd is None else Path(cwd)
    is_root = os.geteuid() == 0
    uid = _allocate_uid() if is_root and limits.drop_privileges else None
    try:
        _prepare_workdir(workdir, files, uid)
        full_env = {**_base_env(), **(env or {}),
                    "HOME": str(workdir), "TMPDIR": str(workdir / "tmp")}
        namespaces = 0
        if is_root:
            namespaces = CLONE_NEWNS | CLONE_NEWPID | (0 if limits.network else CLONE_NEWNET)
        plan = _Plan(limits, -1, namespaces, uid, engine_pid=os.getpid())
        if namespaces:
            plan.covers = _scratch_covers(workdir, limits)
            if uid is not None:
                reach = [*_executable_paths(argv[0], full_env), os.path.realpath(workdir),
                         *_engine_paths()]
                plan.covers += _blocked_covers(reach)
        return await _run(argv, plan, workdir, full_env, stdin)
    finally:
        _release_uid(uid)
        if owned and not keep:
            remove_tree(workdir)
        elif uid is not None:  # hand the caller's dir (and what the program made) back
            _chown_tree(workdir, os.geteuid(), os.getegid())


async def _run(argv: list[str], plan: _Plan, workdir: Path, env: dict[str, str],
               stdin: bytes | None) -> SandboxResult:
    loop = asyncio.get_running_loop()
    limits = plan.limits
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    plan.status_fd = status_w
    stdin_file = None
    if stdin is not None:  # a file, not a pipe: nothing to feed while the program runs
        stdin_file = tempfile.TemporaryFile()
        stdin_file.write(stdin)
        stdin_file.seek(0)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once: the fork is the sandbox's
            argv, stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
            stdout=out_w, stderr=err_w, cwd=workdir, env=env, start_new_session=True,
            pass_fds=(status_w,), preexec_fn=lambda: _supervise(plan))
    except BaseException:
        for fd in (status_r, status_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    finally:
        if stdin_file is not None:
            stdin_file.close()
    for fd in (status_w, out_w, err_w):
        os.close(fd)
    out = _CappedReader(loop, out_r, limits.max_output_bytes)
    err = _CappedReader(loop, err_r, limits.max_output_bytes)
    status = _StatusReader(loop, status_r)
    timed_out = False
    try:
        with anyio.move_on_after(max(0.0, started + limits.wall_s - time.monotonic())):
            await status.finished.wait()
        if not status.finished.is_set():
            timed_out = True
            await _kill_candidate(status, proc)
        wall = time.monotonic() - started
        supervisor_code = await _reap(proc, KILL_GRACE_S)
        # Output still in flight after the program ended: read it briefly, then stop.
        with anyio.move_on_after(DRAIN_GRACE_S):
            await out.done.wait()
            await err.done.wait()
    except BaseException:  # cancelled (or worse): the program must not outlive the call
        _kill_now(status, proc)
        raise
    finally:
        for reader in (out, err, status):
            reader.close()
    if status.errors and any(e.startswith("setup") or e.startswith("supervisor")
                             for e in status.errors):
        raise SandboxError(f"sandbox for {argv[0]!r} failed: {'; '.join(status.errors)}")
    returncode = signum = None
    if status.ended is not None:
        kind, value = status.ended
        returncode, signum = (value, None) if kind == "exit" else (None, value)
    elif timed_out:
        signum = signal.SIGKILL
    elif supervisor_code is not None:
        raise SandboxError(f"sandbox supervisor for {argv[0]!r} ended without a report "
                           f"(code {supervisor_code})")
    return SandboxResult(
        returncode=returncode,
        stdout=_relative(bytes(out.kept).decode("utf-8", "replace"), workdir),
        stderr=_relative(bytes(err.kept).decode("utf-8", "replace"), workdir),
        timed_out=timed_out, signal=signum,
        stdout_truncated=out.truncated, stderr_truncated=err.truncated,
        wall_s=wall, workdir=workdir, network_isolated=status.network_isolated,
        pid=status.pid, uid=plan.uid if plan.uid is not None else os.geteuid(),
        stdout_bytes=out.total, stderr_bytes=err.total,
    )


def _relative(text: str, workdir: Path) -> str:
    """Paths inside the private work dir, written relative to it: the dir's name is random,
    and compiler errors and tracebacks read the same from run to run without it."""
    for form in {str(workdir), os.path.realpath(workdir)}:
        text = text.replace(form + os.sep, "").replace(form, ".")
    return text


async def _kill_candidate(status: _StatusReader, proc: subprocess.Popen) -> None:
    """SIGKILL the candidate's process group; the supervisor then reaps and reports."""
    if status.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(status.pid, signal.SIGKILL)
        with anyio.move_on_after(KILL_GRACE_S):
            await status.finished.wait()
    if not status.finished.is_set():  # no report: take the supervisor down too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _kill_now(status: _StatusReader, proc: subprocess.Popen) -> None:
    """Kill without waiting. The supervisor reaps the program and exits; ``subprocess``
    reaps the supervisor later (at the next Popen)."""
    if status.pid is None and status.fd >= 0:
        status._on_readable()  # the pid line may be in the pipe, unread
    target = status.pid if status.pid is not None else proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(target, signal.SIGKILL)


async def _reap(proc: subprocess.Popen, grace_s: float) -> int | None:
    """Collect the supervisor's exit status, waiting at most ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        code = proc.poll()
        if code is not None or time.monotonic() >= deadline:
            return code
        await anyio.sleep(0.005)
