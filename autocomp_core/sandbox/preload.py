"""A fork server for sandboxed Python programs whose imports cost more than their work.

A CUDA candidate's worker spends about 1.6 CPU-seconds of a small CPU importing torch before
it does anything. ``run_sandboxed([sys.executable, "-m", MODULE, ...], preload=server)``
instead forks the run from ``server``, a process that imported MODULE (and so its libraries)
once::

    engine ─exec─ preload server ─fork─ supervisor ─fork─ init ─fork─ program (MODULE)

The fork becomes the sandbox's supervisor exactly as the fresh interpreter would
(``supervisor.supervise``: the same namespaces, per-run uid, limits and status
pipe), and where a fresh program would exec, runs MODULE's code as ``__main__`` under the
run's argv, environment and work dir. What it cannot carry over it does not try:
bubblewrap (which execs) and an argv that is not ``python -m MODULE`` run as before.

Trust: the server is ours. It imports only the modules it was named, never runs a program
itself, and holds nothing a program may not see (it starts with the sandbox's minimal
environment, in an empty dir). Each run is a fork of the server as it stood after its
imports, so nothing one program does reaches the next, and the program holds no file but
its standard streams (the socket that asks for runs is closed in every fork). The server
ends when the engine closes that socket or exits, and its runs die with it; a run whose
handle the engine drops (a cancelled call) is killed at once.

Unlike a fresh interpreter, a forked program ends without interpreter teardown (atexit
hooks, waiting for threads): its exit code is MODULE's ``SystemExit`` (1 and a traceback
for an uncaught exception, 0 for a normal return), as ``python -m`` reports it.
"""

from __future__ import annotations

import array
import contextlib
import functools
import importlib.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
import types
import weakref
from collections.abc import Sequence
from typing import ClassVar

import anyio

from . import supervisor

#: Seconds the engine waits for a server to finish its imports before running without it.
START_TIMEOUT_S = 300.0
#: A server with no run for this long leaves (the next run starts it again).
IDLE_S = 120.0
#: File descriptors that come with each request: stdin, stdout, stderr, status, reply.
REQUEST_FDS = 5
MAX_MESSAGE = 1 << 20
#: What may differ between a run's environment and its server's (each run has its own).
PER_RUN_ENV = ("HOME", "TMPDIR")


class PreloadServer:
    """A server that imports ``modules``; runs of any of them are forked from it.

    ``PreloadServer.shared(modules, env)`` gives the one every caller in this process uses
    for those modules and that ``env`` (the ``env`` given to ``run_sandboxed``). The process
    starts with the first run, under that run's environment, and serves only runs whose
    environment is the same but for HOME and TMPDIR; it leaves after ``IDLE_S`` without runs
    and starts again on need. A server that cannot start (an import fails) is not used
    again: its runs get fresh interpreters, which show the failure as the program's own."""

    _shared: ClassVar[dict[tuple, PreloadServer]] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, modules: Sequence[str], env: dict[str, str]) -> PreloadServer:
        key = (tuple(modules), tuple(sorted(env.items())))
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls(modules)
            return cls._shared[key]

    def __init__(self, modules: Sequence[str], idle_s: float = IDLE_S) -> None:
        self.modules = tuple(modules)
        self.idle_s = idle_s
        self.failed: str | None = None  # why the server could not start
        self._env: dict[str, str] | None = None  # the environment its runs share
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()  # (harnesses of several event loops may share one)
        self._finalizer = weakref.finalize(self, _stop, None, None)

    def serves(self, argv: Sequence[str], env: dict[str, str]) -> bool:
        """Whether a run of ``argv`` under ``env`` (its full environment) can be forked from
        this server."""
        return (
            self.failed is None
            and len(argv) >= 3
            and argv[0] == sys.executable
            and argv[1] == "-m"
            and argv[2] in self.modules
            and (self._env is None or self._env == _shared_env(env))
        )

    async def launch(
        self, plan: dict, argv: list[str], env: dict[str, str], cwd: str, stdio: Sequence[int]
    ) -> PreloadedRun | None:
        """Fork a supervisor for ``plan`` and ``argv`` (``stdio``: the run's stdin, stdout,
        stderr and status pipe); None where the server cannot (the caller execs instead)."""
        request = json.dumps({"plan": plan, "argv": argv, "env": env, "cwd": cwd}).encode()
        for _ in range(2):  # a server that has just left on its own is started again
            control = await self._running(env)
            if control is None:
                return None
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                fds = array.array("i", [*stdio, theirs.fileno()])
                control.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            except OSError:
                ours.close()
                self._forget(control)
                continue
            finally:
                theirs.close()
            run = PreloadedRun(ours)
            try:
                started = await run.started()
            except BaseException:  # cancelled: closing our end has the server kill the run
                ours.close()
                raise
            if started:
                return run
            self._forget(control)
            return None  # (it left with the request unread: nothing was forked)
        return None

    async def _running(self, env: dict[str, str]) -> socket.socket | None:
        """The control socket of a live server, started now (imports and all) if needed."""
        with self._lock:
            if self.failed is not None:
                return None
            if self._control is not None and self._proc is not None and self._proc.poll() is None:
                return self._control if self._env == _shared_env(env) else None
            self._env = _shared_env(env)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            home = tempfile.mkdtemp(prefix="autocomp-preload-")
            try:
                proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once: fork and exec
                    [sys.executable, "-m", __name__, str(theirs.fileno()), f"{self.idle_s:g}"]
                    + list(self.modules),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=home,
                    env={**self._env, "HOME": home, "TMPDIR": home},
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,  # a Ctrl-C of the engine is not the server's
                )
            finally:
                theirs.close()
            self._proc, self._control = proc, ours
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop, proc, ours)
        answer = b""
        with anyio.move_on_after(START_TIMEOUT_S):
            await anyio.wait_readable(ours)
            answer = ours.recv(MAX_MESSAGE)
        with contextlib.suppress(OSError):
            os.rmdir(home)  # (empty: the server writes nothing there)
        if answer != b"ready":
            self.failed = answer.decode(errors="replace") or "no answer"
            self.close()
            return None
        return ours

    def _forget(self, control: socket.socket) -> None:
        with self._lock:
            if self._control is control:
                self.close()

    def close(self) -> None:
        """End the server (runs still going die with it) and reap it."""
        self._finalizer()
        self._proc = self._control = None


def _shared_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in PER_RUN_ENV}


def _stop(proc: subprocess.Popen | None, control: socket.socket | None) -> None:
    if control is not None:
        control.close()  # the server leaves when it reads the end of this socket
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class PreloadedRun:
    """A supervisor forked by the server: its pid, and its exit status once reaped (the
    part of ``subprocess.Popen`` the sandbox uses)."""

    def __init__(self, reply: socket.socket) -> None:
        self._reply = reply
        self.pid = 0
        self.returncode: int | None = None

    async def started(self) -> bool:
        """Whether the server forked the run (False: it could not, or it has ended)."""
        await anyio.wait_readable(self._reply)
        kind, _, value = self._reply.recv(64).decode().partition(" ")
        if kind != "pid":
            self._reply.close()
            return False
        self.pid = int(value)
        self._reply.setblocking(False)
        return True

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                message = self._reply.recv(64)
            except BlockingIOError:
                return None
            # an empty message: the server ended without reaping it (it died with the server)
            self.returncode = int(message.split()[1]) if message else -signal.SIGKILL
            self._reply.close()
        return self.returncode


# --------------------------------------------------------------------------- the server


def _serve(control: socket.socket, idle_s: float) -> tuple[dict, list[int]]:
    """Fork a supervisor per request and report each one's end. Returns only in a fork, with
    its request; exits when the engine closes ``control``, or after ``idle_s`` without runs."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # (the wakeup fd is what is read)
    replies: dict[int, socket.socket] = {}  # per run (its supervisor's pid): the engine's handle
    dropped: set[int] = set()  # runs whose handle the engine closed: killed, not yet reaped
    while True:
        watched = {reply.fileno(): pid for pid, reply in replies.items() if pid not in dropped}
        readable, _, _ = select.select(
            [control.fileno(), wake_r, *watched], [], [], None if replies else idle_s
        )
        if not readable:
            os._exit(0)  # idle: the engine starts a server again on need
        for fd in readable:
            if fd in watched:  # (the engine never writes there: this is its end)
                with contextlib.suppress(OSError):  # the supervisor, and so all of the run
                    os.killpg(watched[fd], signal.SIGKILL)
                dropped.add(watched[fd])
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            while replies:
                try:
                    pid, wait_status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                reply = replies.pop(pid)
                dropped.discard(pid)
                with contextlib.suppress(OSError):
                    reply.send(f"exit {os.waitstatus_to_exitcode(wait_status)}".encode())
                reply.close()
        if control.fileno() in readable:
            message, ancillary, _, _ = control.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(64))
            if not message:
                os._exit(0)  # the engine is done (or gone); the runs die with this process
            fds = array.array("i")
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            if len(fds) != REQUEST_FDS:
                for fd in fds:
                    os.close(fd)
                continue
            *stdio, reply_fd = fds
            reply = socket.socket(fileno=reply_fd)
            try:
                pid = os.fork()
            except OSError as exc:
                with contextlib.suppress(OSError):
                    reply.send(f"error {exc}".encode())
                reply.close()
                pid = -1
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                for sock in (control, reply, *replies.values()):
                    sock.close()
                return json.loads(message), list(stdio)
            for fd in stdio:
                os.close(fd)
            if pid > 0:
                replies[pid] = reply
                with contextlib.suppress(OSError):  # (gone: the next select kills the run)
                    reply.send(f"pid {pid}".encode())


def _become_supervisor(request: dict, stdio: list[int], mains: dict) -> None:
    """In a fork of the server: take the run's streams, environment and work dir, then be
    its supervisor; the program runs its module instead of exec'ing. Never returns."""
    try:
        os.setsid()  # the process group the engine kills if nothing reports
        stdin, stdout, stderr, status = stdio
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        plan, argv = request["plan"], request["argv"]
        plan["status_fd"] = status
        plan["engine_pid"] = os.getppid()  # this run dies with the server
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        program = functools.partial(_run_main, argv, mains[argv[2]], request["cwd"])
    except BaseException as exc:  # noqa: BLE001 - report on the status pipe and leave
        with contextlib.suppress(Exception):
            os.write(stdio[3], f"error supervisor: {exc}\n".encode())
        os._exit(70)
    supervisor.supervise(plan, argv, program=program)


def _run_main(argv: list[str], main: tuple[types.CodeType, object], cwd: str) -> None:
    """Run a preloaded module as ``python -m`` would, then exit with its code."""
    code, spec = main
    os.closerange(3, 1 << 16)  # nothing of the server's stays within the program's reach
    tempfile.tempdir = None  # (TMPDIR is the run's now)
    sys.argv = [spec.origin, *argv[3:]]  # type: ignore[attr-defined]
    if not sys.flags.safe_path:  # ``-m`` puts the working dir first, unless -P / PYTHONSAFEPATH
        sys.path[0] = cwd
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=spec.origin,  # type: ignore[attr-defined]
        __spec__=spec,
        __loader__=spec.loader,  # type: ignore[attr-defined]
        __package__=spec.parent,  # type: ignore[attr-defined]
        __builtins__=__builtins__,
    )
    sys.modules["__main__"] = module
    exit_code = 0
    try:
        exec(code, module.__dict__)
    except SystemExit as exc:
        exit_code = _exit_code(exc.code)
    except BaseException as exc:  # noqa: BLE001 - what ``python -m`` prints for it
        frames = exc.__traceback__
        traceback.print_exception(exc.with_traceback(frames and frames.tb_next))  # (not ours)
        exit_code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(exit_code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    idle_s = float(sys.argv[2])
    mains = {}
    try:
        for name in sys.argv[3:]:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                raise ImportError(f"No module named {name!r}")
            __import__(name)  # its libraries, once, for every run
            code = spec.loader.get_code(name)  # type: ignore[attr-defined]
            mains[name] = (code, spec)
    except BaseException as exc:  # noqa: BLE001 - the engine runs without the server
        control.send(f"{type(exc).__name__}: {exc}".encode()[:4096])
        return
    control.send(b"ready")
    request, stdio = _serve(control, idle_s)
    _become_supervisor(request, stdio, mains)


if __name__ == "__main__":
    main()
