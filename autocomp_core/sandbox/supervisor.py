"""The sandbox's supervisor: a small program the engine execs for every sandboxed run.

The engine never runs Python in a forked copy of itself (a fork of a process with threads,
PyTorch's or anyio's, can deadlock on a lock another thread held): it starts this file
with a fresh interpreter (``python -I -S -B supervisor.py PLAN -- ARGV...``),
which imports nothing but the standard library. Then::

    supervisor ─fork─ init (session leader, PID 1 of its namespace) ─fork─ program (exec)

The supervisor sets up the isolation the plan names, waits, and writes how the run ended
to a status pipe the program never holds (one line each: ``level <isolation>``,
``pid <n>``, ``exit <code>`` or ``signal <n>``, ``execfail <errno>``, ``error <why>``).

Isolation levels (``PLAN["level"]``):

- ``namespaces+uid`` (root): PID, mount and network namespaces; the program runs as a
  fresh unprivileged uid. ``uid`` (root where namespaces are refused): the uid only.
- ``user namespaces`` (no root): an unprivileged user namespace holding PID, mount and
  network namespaces; the program keeps the user's uid.
- ``bubblewrap``: ``bwrap`` (setuid or user namespaces) builds the same namespaces.
- ``none``: limits and a process group only; the supervisor is a subreaper that kills
  the group when the program ends, and a process that called ``setsid`` can outlive it.

In the namespace levels the init is PID 1: it mounts a private ``/proc`` and fresh tmpfs
over the scratch dirs, makes every other mount but the work dir (``PLAN["writable"]``)
read-only, starts the program, reaps every orphan, and when it dies the
kernel kills whatever is left in the namespace, ``setsid`` or not.

``--probe LEVEL`` tries a level's setup in a throwaway child and exits 0 if it works.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Callable

# Linux constants (linux/sched.h, linux/mount.h, linux/prctl.h).
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
OPEN_TREE_CLONE, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 1, 0x8000, 0x4, -100
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and arm64 alike
MOUNT_ATTR_RDONLY = 0x1
NAMESPACES, USER_NAMESPACES = "namespaces+uid", "user namespaces"
UID_ONLY, BUBBLEWRAP, NONE = "uid", "bubblewrap", "none"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    _check(
        _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


class _MountAttr(ctypes.Structure):  # struct mount_attr (linux/mount.h)
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clr", "propagation", "userns_fd")]


def _make_read_only(path: str) -> None:
    """Every mount at and below ``path`` read-only, in this mount namespace only."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    _check(
        _libc.syscall(
            SYS_MOUNT_SETATTR,
            AT_FDCWD,
            path.encode(),
            AT_RECURSIVE,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        f"mount_setattr {path}",
    )


def _clone_tree(path: str) -> int:
    """A detached copy of the mounts at ``path`` (with their flags as they are now)."""
    fd = _libc.syscall(
        SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC
    )
    _check(0 if fd >= 0 else -1, f"open_tree {path}")
    return fd


def _attach_tree(fd: int, path: str) -> None:
    _check(
        _libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH),
        f"move_mount {path}",
    )
    os.close(fd)


def _status_line(wait_status: int) -> bytes:
    if os.WIFSIGNALED(wait_status):
        return f"signal {os.WTERMSIG(wait_status)}\n".encode()
    return f"exit {os.WEXITSTATUS(wait_status)}\n".encode()


def _detach_fds(*keep: int) -> None:
    """Drop the program's stdio in this process, keeping only ``keep`` (the status pipe)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _gone(lifeline: int) -> bool:
    """Whether the process holding the write end of ``lifeline`` has ended (nothing is ever
    written to it: any event is its end-of-file)."""
    poll = select.poll()
    poll.register(lifeline, select.POLLIN | select.POLLHUP)
    return bool(poll.poll(0))


def unshare(level: str, network: bool) -> None:
    """Enter the namespaces of ``level`` (raises OSError where the kernel refuses)."""
    net = 0 if network else CLONE_NEWNET
    if level == NAMESPACES:
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | net), "unshare")
    elif level == USER_NAMESPACES:
        uid, gid = os.getuid(), os.getgid()
        _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | net), "unshare")
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)


def supervise(plan: dict, argv: list[str], program: Callable[[], None] | None = None) -> None:
    """Runs in the supervisor process; never returns. ``program``: called in the program's
    process where it would exec ``argv`` (a fork of a server that preloaded it; not with
    bubblewrap, which execs)."""
    status = plan["status_fd"]
    try:
        level = plan["level"]
        if program is not None and level == BUBBLEWRAP:  # never run it outside bwrap instead
            raise ValueError("bubblewrap execs its program: a preloaded one cannot run in it")
        in_namespaces = level in (NAMESPACES, USER_NAMESPACES)
        if in_namespaces:
            try:
                unshare(level, plan["network"])
            except OSError as exc:  # refused after all: say so, and go on without
                os.write(status, f"note {exc}\n".encode())
                level = UID_ONLY if level == NAMESPACES else NONE
                in_namespaces = False
        if not in_namespaces:
            _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != plan["engine_pid"]:  # the engine is already gone
            os._exit(70)
        os.write(status, f"level {level}\n".encode())
        me = os.getpid()
        # The namespace's init cannot ask whether this process still lives (its parent is
        # outside its PID namespace: getppid() is 0), and this process may die between the
        # fork and the init's own parent-death signal (the engine ended right then). So the
        # init gets the read end of a pipe whose write end only this process holds.
        lifeline, alive = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(alive)
            os.setsid()  # the process group the engine kills at the wall limit
            if in_namespaces:
                init_namespace(plan, argv, lifeline, program)
            elif level == BUBBLEWRAP:
                become_program(plan, _checking_lifeline(argv, lifeline), parent=me)
            else:
                os.close(lifeline)
                become_program(plan, argv, parent=me, program=program)
        os.close(lifeline)
        os.write(status, f"pid {child}\n".encode())
        _detach_fds(status, alive)
        _, wait_status = os.waitpid(child, 0)
        if in_namespaces:
            # The namespace's init reported the program's end and left with 0; anything
            # else means it was killed (the wall limit) or failed.
            if wait_status != 0:
                os.write(status, _status_line(wait_status))
        else:  # no PID namespace: kill what is left of the group and reap the orphans
            try:
                os.killpg(child, signal.SIGKILL)
            except OSError:
                pass
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        time.sleep(0.01)
                except ChildProcessError:
                    break
            if (
                level == BUBBLEWRAP
                and os.WIFEXITED(wait_status)
                and os.WEXITSTATUS(wait_status) > 128
            ):  # bwrap passes a signal on as 128+n
                os.write(status, f"signal {os.WEXITSTATUS(wait_status) - 128}\n".encode())
            else:
                os.write(status, _status_line(wait_status))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and leave
        try:
            os.write(status, f"error supervisor: {exc}\n".encode())
        finally:
            os._exit(70)


def _checking_lifeline(bwrap_argv: list[str], lifeline: int) -> list[str]:
    """bwrap's ``--die-with-parent`` has the same window (its sandbox's init sets its
    parent-death signal after bwrap forked it): inside the sandbox, a shell first checks the
    lifeline, then becomes the program."""
    os.set_inheritable(lifeline, True)
    at = bwrap_argv.index("--") + 1
    check = f'read -t 0 -u {lifeline} && exit 70; exec {lifeline}<&-; exec "$@"'
    return [*bwrap_argv[:at], "/bin/bash", "-c", check, "lifeline", *bwrap_argv[at:]]


def init_namespace(
    plan: dict, argv: list[str], lifeline: int, program: Callable[[], None] | None = None
) -> None:
    """PID 1 of the program's namespaces: set up mounts, start the program, reap, report.

    The program is not PID 1 itself because the kernel drops signals a PID 1 sends itself
    (``abort``, ``raise``). When this process exits the kernel kills the whole namespace.
    """
    status = plan["status_fd"]
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # fork cleared the supervisor's
        if _gone(lifeline):  # the supervisor died before that took effect
            os._exit(70)
        os.close(lifeline)
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        writable = plan.get("writable")
        # a copy of the work dir taken while it is writable, attached once the rest is not
        work = _clone_tree(writable) if writable else None
        if writable:
            try:  # what the covers put back is copied from it: read-only too
                _make_read_only("/")
            except OSError as exc:  # a kernel before 5.12: as root the per-run uid still
                if exc.errno != errno.ENOSYS or plan["uid"] is None:  # guards the user's files
                    raise
        try:  # a /proc that shows only this namespace (writable: a nested sandbox maps uids)
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        except OSError:
            pass
        cover(plan["covers"])
        if work is not None and writable:
            _attach_tree(work, writable)
            os.chdir(writable)  # the old cwd is the read-only mount's
        child = os.fork()
        if child == 0:
            become_program(plan, argv, parent=1, program=program)
        _detach_fds(status)
        while True:  # reap everything; orphans of the namespace land here
            pid, wait_status = os.wait()
            if pid == child:
                break
        os.write(status, _status_line(wait_status))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(status, f"error setup: {exc}\n".encode())
        finally:
            os._exit(70)


def become_program(
    plan: dict, argv: list[str], parent: int, program: Callable[[], None] | None = None
) -> None:
    """Limits, a fresh uid where the plan has one, then exec (or ``program``); never
    returns."""
    status = plan["status_fd"]
    try:
        set_limits(plan["limits"])
        uid = plan["uid"]
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        # Changing uid clears the parent-death signal: set it now, and check the parent lives.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(70)
        os.set_inheritable(status, False)  # closed by a successful exec, kept on failure
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(status, f"error setup: {exc}\n".encode())
        finally:
            os._exit(127)
    if program is not None:
        os.close(status)  # the program must never hold the status pipe
        try:
            program()
        finally:
            os._exit(127)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(status, f"execfail {exc.errno}\n".encode())
    os._exit(127)


def cover(covers: list) -> None:
    """Mount an empty tmpfs over each dir, then put back the entries that must stay visible
    (copied from the view before that tmpfs: an earlier cover's entries show through)."""
    for folder, entries, options in covers:
        if not entries and not os.path.isdir(folder):
            continue  # a dir to hide that an earlier cover took out of view already
        trees = [(entry, _clone_tree(entry)) for entry in entries]
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, options)
        for entry, fd in trees:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.mkdir(entry)
            else:
                os.close(os.open(entry, os.O_CREAT | os.O_WRONLY, 0o644))
            _attach_tree(fd, entry)


def set_limits(limits: dict) -> None:
    def cap(kind: int, value: int) -> None:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    cap(resource.RLIMIT_CPU, limits["cpu_s"])  # soft == hard: the kernel sends SIGKILL at it
    if limits["memory_mb"] is not None:
        cap(resource.RLIMIT_AS, limits["memory_mb"] << 20)
    cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] << 20)
    cap(resource.RLIMIT_CORE, 0)
    if limits["max_processes"] is not None:
        cap(resource.RLIMIT_NPROC, limits["max_processes"])


def bwrap_namespaces(bwrap: str, network: bool) -> list[str]:
    """The start of every ``bwrap`` command line, each run's and the probe's: the bubblewrap
    level's namespaces, ``/`` read-only (the program keeps the user's uid: it writes only
    what is bound writable after this), ``/dev`` and a private ``/proc``."""
    return [
        bwrap,
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        *([] if network else ["--unshare-net"]),
        "--ro-bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--proc",
        "/proc",
    ]


def probe(level: str, bwrap: str | None) -> bool:
    """Whether ``level`` works here: its namespaces, a private /proc and a tmpfs."""
    if level == BUBBLEWRAP:
        if not bwrap:
            return False
        import subprocess  # here only: the supervisor of a run starts faster without it

        done = subprocess.run(
            [*bwrap_namespaces(bwrap, network=False), "--tmpfs", "/tmp", "true"],
            capture_output=True,
            timeout=30,
        )
        return done.returncode == 0
    pid = os.fork()
    if pid == 0:
        try:
            unshare(level, network=False)
            init = os.fork()
            if init == 0:
                _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
                _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k")
                if level == USER_NAMESPACES:  # its read-only mounts need Linux 5.12 or later
                    _make_read_only("/tmp")
                os._exit(0)
            os._exit(os.waitstatus_to_exitcode(os.waitpid(init, 0)[1]))
        except BaseException:  # noqa: BLE001
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def main() -> None:
    if sys.argv[1] == "--probe":
        level = sys.argv[2]
        sys.exit(0 if probe(level, sys.argv[3] if len(sys.argv) > 3 else None) else 1)
    plan = json.loads(sys.argv[1])
    supervise(plan, sys.argv[sys.argv.index("--") + 1 :])


if __name__ == "__main__":
    main()
