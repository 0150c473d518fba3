"""Sandboxed programs forked from a preload server against the same programs in fresh
interpreters: they must end, print and be confined the same, and a fork must hold nothing
of the server or of the runs before it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from autocomp_core.sandbox import (
    BUBBLEWRAP,
    NONE,
    PreloadServer,
    SandboxLimits,
    isolation_level,
    run_sandboxed,
    supervisor,
)
from autocomp_core.sandbox.preload import PreloadedRun

PROGRAM = "autocomp_core.testing.sandbox_program"
IS_ROOT = os.geteuid() == 0
# set by the module when a server imports it, never by a fresh ``python -m`` (its __main__)
FORKED = f"import sys; forked = {PROGRAM!r} in sys.modules\n"

pytestmark = pytest.mark.skipif(
    isolation_level() == BUBBLEWRAP, reason="bubblewrap execs every program: nothing to fork"
)


def program(code: str, *args: str) -> list[str]:
    return [sys.executable, "-m", PROGRAM, textwrap.dedent(code), *args]


@pytest.fixture
def server():
    server = PreloadServer([PROGRAM])
    yield server
    server.close()


async def both(server: PreloadServer, code: str, **kwargs):
    fresh = await run_sandboxed(program(code), **kwargs)
    forked = await run_sandboxed(program(code), preload=server, **kwargs)
    return fresh, forked


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "code",
    [
        "import sys; print('out'); print('err', file=sys.stderr)",
        "raise SystemExit(7)",
        "import sys; sys.exit('a message')",
        "def f():\n    raise ValueError('boom')\nf()",
        "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
        "import sys; print(sys.argv, sys.stdin.read())",
    ],
    ids=["output", "exit code", "exit message", "uncaught", "signal", "argv and stdin"],
)
async def test_a_forked_program_ends_and_prints_as_a_fresh_one(server, code: str) -> None:
    fresh, forked = await both(server, code, stdin=b"in", limits=SandboxLimits(wall_s=60))
    for result in (fresh, forked):
        assert not result.timed_out, result.stderr
    # (a fresh interpreter's traceback starts in runpy, which a fork does not go through)
    runpy = re.compile(r'  File "<frozen runpy>".*\n.*\n')
    assert (forked.returncode, forked.signal, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.signal,
        fresh.stdout,
        runpy.sub("", fresh.stderr),
    )
    assert forked.isolation == fresh.isolation


@pytest.mark.asyncio
async def test_the_program_sees_its_own_run_and_nothing_of_the_server(server, monkeypatch):
    monkeypatch.setenv("AUTOCOMP_TEST_SECRET_KEY", "sk-should-not-leak")
    code = FORKED + textwrap.dedent(
        """
        import os, sys, tempfile
        print(forked)
        print(sorted(os.environ), os.environ["GREETING"])
        print(os.environ["HOME"] == os.getcwd(), tempfile.gettempdir() == os.environ["TMPDIR"])
        print(sys.path[0] == os.getcwd(), os.getuid())
        print(sorted(os.listdir("/proc/self/fd")))
        """
    )
    results = [
        await run_sandboxed(program(code), env={"GREETING": "hi"}, preload=server) for _ in range(2)
    ]
    first, second = (r.stdout.splitlines() for r in results)
    assert first[0] == "True", results[0].stderr
    assert first[1] == "['GREETING', 'HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR'] hi"
    assert first[2:3] == ["True True"] and first[3].startswith("True ")
    assert first[4] == "['0', '1', '2', '3']"  # its streams (3: the listing itself)
    if IS_ROOT:  # a fresh uid per run, as for a fresh interpreter
        uids = {int(lines[3].split()[1]) for lines in (first, second)}
        assert 0 not in uids and len(uids) == 2


@pytest.mark.asyncio
async def test_with_pythonsafepath_the_working_dir_is_off_sys_path_forked_or_fresh() -> None:
    """As ``python -P -m``: a module planted in the work dir is not imported in place of a
    standard one (a grader whose dir a candidate could write would run the candidate's code)."""
    code = (
        "import os, sys; print(os.getcwd() in sys.path, os.path.realpath(os.getcwd()) in sys.path)"
    )
    env = {"PYTHONSAFEPATH": "1"}
    server = PreloadServer([PROGRAM])
    try:
        fresh = await run_sandboxed(program(code), env=env)
        forked = await run_sandboxed(program(code), env=env, preload=server)
    finally:
        server.close()
    assert fresh.stdout.split() == forked.stdout.split() == ["False", "False"], (
        fresh.stderr + forked.stderr
    )


@pytest.mark.asyncio
async def test_nothing_a_program_does_reaches_the_next(server) -> None:
    code = FORKED + textwrap.dedent(
        f"""
        import os, sys
        mod = sys.modules[{PROGRAM!r}]
        print(forked, getattr(mod, "TOUCHED", None), os.environ.get("LEFT"))
        mod.TOUCHED = True
        os.environ["LEFT"] = "behind"
        sys.modules["json"] = None
        """
    )
    runs = [(await run_sandboxed(program(code), preload=server)).stdout for _ in range(2)]
    assert runs == ["True None None\n"] * 2


@pytest.mark.hostile
@pytest.mark.asyncio
async def test_limits_hold_in_a_forked_program(server) -> None:
    spin = await run_sandboxed(
        program(FORKED + "print(forked, flush=True)\nwhile True: pass"),
        limits=SandboxLimits(wall_s=2.0, cpu_s=60),
        preload=server,
    )
    assert spin.timed_out and spin.signal == signal.SIGKILL and spin.stdout == "True\n"
    cpu = await run_sandboxed(
        program("while True: pass"), limits=SandboxLimits(wall_s=30, cpu_s=1), preload=server
    )
    assert not cpu.timed_out and cpu.signal in (signal.SIGKILL, signal.SIGXCPU)
    memory = await run_sandboxed(
        program("x = bytearray(4 << 30)"),
        limits=SandboxLimits(wall_s=30, memory_mb=512),
        preload=server,
    )
    assert memory.returncode == 1 and "MemoryError" in memory.stderr
    if isolation_level() != NONE and IS_ROOT:
        forks = await run_sandboxed(
            program(
                "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
                "            import time; time.sleep(30)\n        n += 1\n"
                "except OSError:\n    print(n)"
            ),
            limits=SandboxLimits(wall_s=30, max_processes=16),
            preload=server,
        )
        assert forks.ok, forks.stderr
        assert int(forks.stdout) < 16


@pytest.mark.hostile
@pytest.mark.asyncio
async def test_a_program_cannot_reach_or_stop_the_server(server) -> None:
    """The program holds no descriptor of the server's (its request socket least of all) or
    of the supervisor's (a status line it wrote would be taken as its end), cannot signal
    the server, and the next run is served as before."""
    await run_sandboxed(program("pass"), preload=server)
    pid = server._proc.pid
    shares_uid_and_pids = isolation_level() == NONE and not IS_ROOT
    code = f"""
        import os, socket
        sent = []
        for fd in range(3, 1024):
            try:
                os.write(fd, b"exit 0\\n")
                sent.append(fd)
            except OSError:
                pass
            try:
                s = socket.socket(fileno=os.dup(fd))
                s.sendmsg([b'{{}}'])
                sent.append(fd)
            except OSError:
                pass
        try:
            if {shares_uid_and_pids}:  # (at ``none`` as a user it could: as the engine too)
                raise ProcessLookupError
            os.kill({pid}, 9)
            print("killed")
        except OSError as exc:
            print(type(exc).__name__)
        print(sent)
        raise SystemExit(3)
    """
    hostile = await run_sandboxed(program(code), preload=server)
    assert hostile.returncode == 3, hostile.stderr
    lines = hostile.stdout.splitlines()
    assert lines[0] in ("ProcessLookupError", "PermissionError"), hostile.stdout
    assert lines[1] == "[]", hostile.stdout
    after = await run_sandboxed(program(FORKED + "print(forked)"), preload=server)
    assert after.stdout == "True\n" and server._proc.pid == pid


@pytest.mark.hostile
@pytest.mark.asyncio
@pytest.mark.parametrize("engine", ["prompt", "slow"])
async def test_a_cancelled_call_kills_the_forked_program_whenever_it_comes(
    server, engine: str, monkeypatch
) -> None:
    """Cancelled once it runs, and at each of the first steps of its start. ``slow``: an
    engine that hears of the fork only after the program started (its event loop was busy)
    and is cancelled then; it drops its handle of the run, and the server kills the run."""
    if engine == "slow":
        heard = PreloadedRun.started

        async def late(run):
            await asyncio.sleep(0.5)
            return await heard(run)

        monkeypatch.setattr(PreloadedRun, "started", late)
    marker = f"pc-{os.getpid() % 10**8}"
    code = f"import ctypes, time\nctypes.CDLL(None).prctl(15, {marker!r}.encode())\ntime.sleep(600)"
    await run_sandboxed(program("pass"), preload=server)  # (started: its imports done)
    for steps in [*range(12), None] if engine == "prompt" else [3]:
        task = asyncio.ensure_future(
            run_sandboxed(program(code), limits=SandboxLimits(wall_s=600), preload=server)
        )
        if steps is None or engine == "slow":
            while not _named(marker):
                await asyncio.sleep(0.02)
        else:
            for _ in range(steps):
                await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(600):
            await asyncio.sleep(0.05)
            if not _named(marker):
                break
        assert not _named(marker), f"left running when cancelled after {steps} steps"


@pytest.mark.asyncio
async def test_a_server_that_cannot_import_leaves_its_runs_to_fresh_interpreters() -> None:
    server = PreloadServer(["autocomp_core.testing.no_such_module"])
    argv = [sys.executable, "-m", "autocomp_core.testing.no_such_module"]
    result = await run_sandboxed(argv, preload=server)
    assert result.returncode == 1 and "No module named" in result.stderr
    assert "ModuleNotFoundError" in (server.failed or "") or "No module" in (server.failed or "")


@pytest.mark.asyncio
async def test_only_runs_of_its_modules_and_its_environment_are_forked(server) -> None:
    first = await run_sandboxed(program(FORKED + "print(forked)"), env={"A": "1"}, preload=server)
    other_env = await run_sandboxed(
        program(FORKED + "print(forked)"), env={"A": "2"}, preload=server
    )
    other_program = await run_sandboxed(
        [sys.executable, "-c", "import sys; print('json' in sys.modules)"], preload=server
    )
    assert (first.stdout, other_env.stdout) == ("True\n", "False\n")
    assert other_program.stdout == "False\n"  # (the server has json imported: not a fork)


@pytest.mark.asyncio
async def test_an_idle_server_leaves_and_is_started_again() -> None:
    server = PreloadServer([PROGRAM], idle_s=0.5)
    try:
        await run_sandboxed(program("pass"), preload=server)
        first = server._proc
        await asyncio.to_thread(first.wait, 30)
        again = await run_sandboxed(program(FORKED + "print(forked)"), preload=server)
        assert again.stdout == "True\n" and server._proc is not first
    finally:
        server.close()


@pytest.mark.hostile
@pytest.mark.asyncio
async def test_the_server_and_its_runs_die_with_the_engine(tmp_path: Path) -> None:
    # a forked program's command line is the server's: it names itself (its comm) instead
    marker = f"pl-{os.getpid() % 10**8}"
    engine = tmp_path / "engine.py"
    engine.write_text(
        textwrap.dedent(f"""
        import asyncio, ctypes, os, sys
        from autocomp_core.sandbox import SandboxLimits, run_sandboxed
        from autocomp_core.sandbox import PreloadServer

        def named():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if open(f"/proc/{{pid}}/comm").read().strip() == {marker!r}:
                        return True
                except OSError:
                    pass
            return False

        async def main():
            server = PreloadServer([{PROGRAM!r}])
            code = ("import ctypes, time\\n"
                    "ctypes.CDLL(None).prctl(15, {marker!r}.encode())\\n"
                    "time.sleep(600)")
            asyncio.ensure_future(run_sandboxed(
                [sys.executable, "-m", {PROGRAM!r}, code],
                limits=SandboxLimits(wall_s=600.0), preload=server))
            for _ in range(600):
                await asyncio.sleep(0.05)
                if named():
                    print(server._proc.pid, flush=True)
                    break
            os._exit(0)  # the engine crashes without cleaning up

        asyncio.run(main())
    """)
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(engine),
        stdout=asyncio.subprocess.PIPE,
        cwd=Path(__file__).parent.parent,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    out, _ = await proc.communicate()
    assert out.strip(), "the forked program never started"
    server_pid = int(out)
    for _ in range(600):  # (a loaded machine has taken seconds to tear a namespace down)
        if not _alive(server_pid) and not _named(marker):
            break
        await asyncio.sleep(0.05)
    assert not _alive(server_pid)
    assert not _named(marker)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _named(comm: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == comm:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_the_supervisor_never_runs_a_preloaded_program_without_bubblewrap_asked_for() -> None:
    """``run_sandboxed`` never forks under bubblewrap; the supervisor refuses one all the same
    rather than run it outside bwrap's sandbox."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the supervisor never returns)
        os.close(read)
        plan = {"status_fd": write, "level": BUBBLEWRAP}
        supervisor.supervise(plan, ["true"], program=lambda: os._exit(0))
    os.close(write)
    _, wait_status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as report:
        assert os.waitstatus_to_exitcode(wait_status) == 70
        assert b"error supervisor: bubblewrap execs its program" in report.read()
