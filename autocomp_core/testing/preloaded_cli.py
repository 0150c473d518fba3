"""The ``autocomp-core`` command for test suites, without paying its imports on every run.

A suite runs the command line hundreds of times, and each run spends about half a second of CPU
importing third-party libraries (one second where a model is configured: ``import openai``)
before it does anything. ``preloaded_cli()`` returns an argv prefix that stands in for
``[sys.executable, "-m", "autocomp_core.cli"]``: a small stdlib-only client that hands its
arguments, environment, working directory and standard streams to a fork server started once per
test process. The server has imported those libraries, and nothing else: never autocomp, its
plugins, numpy or torch, so each command imports them itself, under its own environment. Each
command runs in a process of its own, forked for it; its exit status (or the signal that ended
it) becomes the client's, signals sent to the client are passed on, and a client that is killed
takes its command down with it.

An environment the fork cannot reproduce (other ``PYTHON*`` settings or locale than the
server's) gets the real interpreter instead, with the same streams. Tests that need the
command's own pid or process group (SIGKILL at a given moment, ``killpg``) should run the plain
interpreter.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import io
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: the client each command line starts (standard library only, run with ``python -I -S``)
CLIENT = Path(__file__).with_name("preloaded_cli_client.py")

#: what the server imports ahead: the command line's third-party libraries
PRELOAD = (
    "aiohttp",
    "anyio",
    "anyio._backends._asyncio",
    "asyncio",
    "click",
    "importlib.metadata",
    "openai",
    "platformdirs",
    "pluggy",
    "pydantic",
    "rich.console",
    "rich.live",
    "rich.panel",
    "rich.progress_bar",
    "rich.table",
    "rich.text",
    "rich.traceback",
    "sqlite3",
    "structlog",
    "tomli_w",
    "tomllib",
)

#: start-up settings a forked command takes on itself; any other PYTHON*, LC_* or LANG
#: variable that differs from the server's gets a fresh interpreter
_EMULATED = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")

_server: subprocess.Popen | None = None
_socket_dir: str | None = None


def preloaded_cli() -> list[str]:
    """The argv prefix of a preloaded ``autocomp-core``; the first call starts this process's
    fork server (in the background: the first commands wait for it)."""
    global _server, _socket_dir
    if _server is None or _server.poll() is not None:
        _socket_dir = tempfile.mkdtemp(prefix="autocomp-cli-")
        _server = subprocess.Popen(
            # run as a file, not ``-m``: importing it as a module would import autocomp_core
            [sys.executable, __file__, str(Path(_socket_dir) / "socket")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # a test runner may use its own stdout (pytest-xdist)
        )
        # the clients fall back to a fresh interpreter at once if this server has died
        (Path(_socket_dir) / "server.pid").write_text(str(_server.pid))
        atexit.register(_stop, _server, _socket_dir)
    assert _socket_dir is not None
    return [sys.executable, "-I", "-S", str(CLIENT), str(Path(_socket_dir) / "socket")]


def _stop(server: subprocess.Popen, socket_dir: str) -> None:
    server.kill()
    server.wait()
    shutil.rmtree(socket_dir, ignore_errors=True)


# -- the server --------------------------------------------------------------------------------


def _pythonpath(env: dict[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _startup_settings(env: dict[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in env.items()
        if (k.startswith("PYTHON") and k not in _EMULATED) or k.startswith("LC_") or k == "LANG"
    }


def _serve(path: str) -> socket.socket:
    """Accepts clients until this server's parent is gone; returns (in a forked child) the
    connection of one client."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional library: the commands import what they need
            pass
    # Out of the collector's reach: a command's collections would otherwise walk (and so copy,
    # page by page) the whole preloaded heap, costing more than the imports saved.
    gc.freeze()
    try:  # how a relay waits for its command (Linux 5.3 and later)
        os.close(os.pidfd_open(os.getpid()))
        serving = True
    except (AttributeError, OSError):  # then every client gets a fresh interpreter
        serving = False
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # clients connect only once it listens
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the relays reap themselves
    parent = os.getppid()
    while os.getppid() == parent:
        if not select.select([listener], [], [], 1.0)[0]:
            continue
        conn, _ = listener.accept()
        if serving and os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            return conn
        conn.close()
    os._exit(0)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            os._exit(1)
        data += chunk
    return json.loads(data), fds


def _relay(conn: socket.socket) -> dict[str, Any]:
    """Forks the command's process and returns its request there; here, passes the client's
    signals on and reports how the command ended, then exits."""
    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        return request
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    ended = os.pidfd_open(pid)
    buffer = b""
    while True:
        ready = select.select([conn.fileno(), ended], [], [])[0]
        if ended in ready:
            _, status = os.waitpid(pid, 0)
            try:
                conn.sendall(f"status {status}\n".encode())
            finally:
                os._exit(0)
        chunk = conn.recv(64)
        if not chunk:  # the client is gone: so is its command
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
        buffer += chunk
        *signals, buffer = buffer.split(b"\n")
        for signum in signals:
            os.kill(pid, int(signum))


def _become(request: dict[str, Any], server_env: dict[str, str], server_path: list[str]) -> None:
    """Turns this forked process into the command the client asked for (as far as an
    interpreter that has already started can), or execs a fresh interpreter where it cannot."""
    env, argv, cwd = request["env"], request["argv"], request["cwd"]
    os.chdir(cwd)
    if _startup_settings(env) != _startup_settings(server_env):
        os.execve(sys.executable, [sys.executable, "-m", "autocomp_core.cli", *argv], env)
    os.environ.clear()
    os.environ.update(env)
    # sys.path as `python -m` builds it: the working directory, PYTHONPATH, then the rest
    inherited = set(_pythonpath(server_env))
    sys.path[:] = [cwd, *_pythonpath(env), *(p for p in server_path if p not in inherited)]
    importlib.invalidate_caches()
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    # the signals the client passes on: ignored where the caller ignores them, the rest as a
    # fresh interpreter has them
    for number, ignored in request["ignored"].items():
        signum = signal.Signals(int(number))
        if ignored:
            signal.signal(signum, signal.SIG_IGN)
        elif signum == signal.SIGINT:
            signal.signal(signum, signal.default_int_handler)
        else:
            signal.signal(signum, signal.SIG_DFL)
    assert isinstance(sys.stdout, io.TextIOWrapper)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.argv = ["-m", *argv]


def main() -> None:
    del sys.path[0]  # this file's folder
    server_env, server_path = dict(os.environ), list(sys.path)
    request = _relay(_serve(sys.argv[1]))
    _become(request, server_env, server_path)
    runpy.run_module("autocomp_core.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
