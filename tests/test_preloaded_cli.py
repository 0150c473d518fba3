"""The preloaded command line the tests use: each command behaves as ``python -m
autocomp_core.cli`` would, with the caller's arguments, environment, working directory, streams,
signals and end."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autocomp_core.testing import preloaded_cli

PLAIN = [sys.executable, "-m", "autocomp_core.cli"]
TOY_PROBLEM = Path(__file__).parent / "toybackend" / "problems" / "sum_squares.py"

EXTRA_PLUGIN = """
from autocomp_core import hookimpl
from toy_plugin import ToyBackend


class ExtraBackend(ToyBackend):
    name = "extra"


@hookimpl
def autocomp_register_backends():
    return [ExtraBackend]
"""


def timeless(out: str) -> str:
    return re.sub(r'"duration_s": [0-9.e+-]+', '"duration_s": ...', out)


def both(*args: str, **kw) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    run = dict(capture_output=True, text=True, timeout=120, **kw)
    return subprocess.run([*preloaded_cli(), *args], **run), subprocess.run([*PLAIN, *args], **run)


@pytest.mark.parametrize(
    "args",
    [
        ("problems", "toy", "--json"),
        ("eval", "toy", "sum_squares", str(TOY_PROBLEM), "--json"),
        ("eval", "toy", "nosuch", str(TOY_PROBLEM)),  # exit 2, one line on stderr
        ("eval", "toy"),  # click's usage error
    ],
)
def test_a_command_prints_and_ends_as_the_plain_one(args):
    fast, plain = both(*args)
    assert (fast.returncode, timeless(fast.stdout), fast.stderr) == (
        plain.returncode,
        timeless(plain.stdout),
        plain.stderr,
    )


def test_the_callers_environment_working_directory_and_pythonpath_count(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "extra_plugin.py").write_text(EXTRA_PLUGIN)
    (tmp_path / "here.py").write_text(TOY_PROBLEM.read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "plugins"), env.get("PYTHONPATH", "")])
    env["AUTOCOMP_PLUGINS"] = "toy_plugin,extra_plugin"
    # a plugin only the caller's PYTHONPATH finds, named only in the caller's environment, and
    # a program named relative to the caller's working directory
    fast, plain = both("eval", "extra", "sum_squares", "here.py", "--json", env=env, cwd=tmp_path)
    assert fast.returncode == plain.returncode == 0, fast.stderr
    assert timeless(fast.stdout) == timeless(plain.stdout)
    env["AUTOCOMP_PLUGINS"] = "toy_plugin"
    fast, plain = both("eval", "extra", "sum_squares", "here.py", env=env, cwd=tmp_path)
    assert fast.returncode == plain.returncode == 2
    assert fast.stderr == plain.stderr and "unknown backend 'extra'" in fast.stderr


def test_other_interpreter_settings_get_a_fresh_interpreter():
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}  # only an interpreter start reads it
    fast = subprocess.run(
        [*preloaded_cli(), "problems", "toy"], capture_output=True, text=True, env=env, timeout=120
    )
    assert fast.returncode == 0, fast.stderr
    # a fresh interpreter imports pydantic itself; a forked one would find it preloaded
    assert re.search(r"^import time: .*\|\s+pydantic$", fast.stderr, re.MULTILINE), fast.stderr


#: runs argv[2:] with signal argv[1] ignored ("-N") or at its default ("N"), whatever this
#: process does with it
WITH_SIGNAL = (
    "import os, signal, sys; n = int(sys.argv[1]); "
    "signal.signal(abs(n), signal.SIG_IGN if n < 0 else signal.SIG_DFL); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def serve(cli: list[str], root: Path, signum: int, ignored: bool = False):
    """``serve`` started (with ``signum`` ignored or not) and listening: a signal before then
    may find no handler yet."""
    disposition = str(-signum if ignored else signum)
    proc = subprocess.Popen(
        [sys.executable, "-c", WITH_SIGNAL, disposition, *cli, "serve", str(root), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    match = re.search(r"at http://127\.0\.0\.1:(\d+)/", line)
    assert match, line
    port = int(match.group(1))
    assert listening(port)
    return proc, port


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_caller_reaches_the_command_whose_end_is_the_callers(tmp_path, signum):
    ends = []
    for cli in (preloaded_cli(), PLAIN):
        proc, port = serve(cli, tmp_path, signum)
        try:
            proc.send_signal(signum)
            ends.append(proc.wait(timeout=60))
        finally:
            proc.kill()
        assert not listening(port)
    assert ends[0] == ends[1]


def test_a_signal_the_caller_ignores_the_command_ignores(tmp_path):
    for cli in (preloaded_cli(), PLAIN):
        proc, port = serve(cli, tmp_path, signal.SIGINT, ignored=True)
        try:
            proc.send_signal(signal.SIGINT)
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            assert listening(port)
        finally:
            proc.kill()


def test_a_killed_caller_takes_its_command_down(tmp_path):
    proc, port = serve(preloaded_cli(), tmp_path, signal.SIGTERM)
    proc.kill()
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not listening(port)


def test_without_a_live_server_a_command_runs_in_a_fresh_interpreter(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    (tmp_path / "server.pid").write_text(ended.stdout)  # a server that has ended; no socket
    client = [*preloaded_cli()[:-1], str(tmp_path / "socket")]
    # (it would wait a minute for a live server still starting)
    fast, plain = (
        subprocess.run(
            [*cli, "problems", "toy", "--json"], capture_output=True, text=True, timeout=30
        )
        for cli in (client, PLAIN)
    )
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, plain.stdout, plain.stderr)
