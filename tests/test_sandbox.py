"""The sandbox against ordinary and hostile programs, run for real in subprocesses."""
from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from autocomp_core.sandbox import SandboxLimits, private_workdir, run_sandboxed

PY = sys.executable
IS_ROOT = os.geteuid() == 0


def python(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def processes_of(uid: int) -> list[int]:
    """Pids of live (or zombie) processes owned by ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except FileNotFoundError:
                pass
    return found


def assert_group_gone(pgid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


# ---------------------------------------------------------------- ordinary programs


@pytest.mark.asyncio
async def test_exit_codes_and_output() -> None:
    ok = await run_sandboxed(python("print('out'); import sys; print('err', file=sys.stderr)"))
    assert (ok.returncode, ok.ok, ok.stdout, ok.stderr) == (0, True, "out\n", "err\n")
    assert not ok.timed_out and ok.signal is None
    bad = await run_sandboxed(python("raise SystemExit(7)"))
    assert (bad.returncode, bad.ok, bad.signal) == (7, False, None)
    killed = await run_sandboxed(python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    assert killed.returncode is None and killed.signal == signal.SIGSEGV and not killed.timed_out


@pytest.mark.asyncio
async def test_stdin_env_and_private_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOCOMP_TEST_SECRET_KEY", "sk-should-not-leak")
    result = await run_sandboxed(
        python("""
            import os, sys
            data = sys.stdin.read()
            print(data.upper())
            print(os.environ.get("GREETING"), os.environ.get("AUTOCOMP_TEST_SECRET_KEY"))
            print(os.environ["HOME"] == os.getcwd(), os.environ["TMPDIR"].startswith(os.getcwd()))
        """),
        stdin=b"hello sandbox", env={"GREETING": "hi"})
    assert result.ok, result.stderr
    assert result.stdout.splitlines() == ["HELLO SANDBOX", "hi None", "True True"]


@pytest.mark.asyncio
async def test_files_in_private_workdir_removed_afterwards() -> None:
    code = """
        import pathlib
        text = pathlib.Path("data/input.txt").read_text()
        pathlib.Path("result.txt").write_text(text * 2)
        print(pathlib.Path.cwd())
    """
    result = await run_sandboxed(python(code), files={"data/input.txt": "ab", "blob.bin": b"\0\1"})
    assert result.ok, result.stderr
    assert result.stdout.strip() == "."  # the work dir, reported relative to itself
    assert not result.workdir.exists()

    kept = await run_sandboxed(python(code), files={"data/input.txt": "xy"}, keep=True)
    try:
        assert (kept.workdir / "result.txt").read_text() == "xyxy"
    finally:
        with private_workdir("unused-") as scratch:
            assert scratch.is_dir()
        assert not scratch.exists()
        import shutil
        shutil.rmtree(kept.workdir)


@pytest.mark.asyncio
async def test_given_cwd_is_used_and_kept(tmp_path: Path) -> None:
    result = await run_sandboxed(python("open('made.txt', 'w').write(open('in.txt').read())"),
                                 cwd=tmp_path, files={"in.txt": "payload"})
    assert result.ok, result.stderr
    assert (tmp_path / "made.txt").read_text() == "payload"
    # the caller's dir and what the program made in it belong to the caller again
    assert {p.stat().st_uid for p in (tmp_path, tmp_path / "made.txt")} == {os.geteuid()}


@pytest.mark.asyncio
async def test_file_outside_workdir_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the work dir"):
        await run_sandboxed(["true"], files={"../escape.txt": "x"})


@pytest.mark.asyncio
async def test_missing_program_raises() -> None:
    with pytest.raises(FileNotFoundError):
        await run_sandboxed(["/nonexistent/program-for-sandbox-test"])


@pytest.mark.asyncio
async def test_parallel_runs_are_separate_and_leak_no_descriptors() -> None:
    before = len(os.listdir("/proc/self/fd"))
    results = await asyncio.gather(*(
        run_sandboxed(python(f"import os; print({i}, os.getuid())")) for i in range(6)))
    after = len(os.listdir("/proc/self/fd"))
    assert [r.stdout.split()[0] for r in results] == [str(i) for i in range(6)]
    if IS_ROOT:  # each run gets its own uid, so per-user process limits do not mix
        assert len({r.uid for r in results}) == 6
        assert all(r.stdout.split()[1] == str(r.uid) and r.uid != 0 for r in results)
    assert after == before


# ---------------------------------------------------------------- hostile programs


@pytest.mark.asyncio
async def test_infinite_loop_is_killed_at_the_wall_limit() -> None:
    result = await run_sandboxed(python("while True: pass"),
                                 limits=SandboxLimits(wall_s=1.0, cpu_s=30))
    assert result.timed_out
    assert result.signal == signal.SIGKILL and result.returncode is None
    assert_group_gone(result.pid)


@pytest.mark.asyncio
async def test_cpu_limit_stops_a_spinning_program_before_the_wall() -> None:
    result = await run_sandboxed(python("while True: pass"),
                                 limits=SandboxLimits(wall_s=60.0, cpu_s=1))
    assert not result.timed_out
    assert result.signal in (signal.SIGKILL, signal.SIGXCPU)


@pytest.mark.asyncio
async def test_sigterm_ignoring_child_and_grandchildren_all_die() -> None:
    code = """
        import os, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kids = [subprocess.Popen([sys.executable, "-c",
                 "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
                for _ in range(3)]
        # one grandchild leaves the process group altogether
        kids.append(subprocess.Popen(["sleep", "600"], start_new_session=True))
        print("started", len(kids), flush=True)
        while True:
            time.sleep(1)
    """
    result = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=2.0))
    assert result.stdout.strip() == "started 4", result.stderr
    assert result.timed_out and result.signal == signal.SIGKILL
    assert_group_gone(result.pid)
    if IS_ROOT:  # in its PID namespace even the setsid() escapee died with it
        assert processes_of(result.uid) == []


@pytest.mark.asyncio
async def test_descendants_left_behind_after_normal_exit_are_killed() -> None:
    code = """
        import subprocess
        subprocess.Popen(["sleep", "600"])
        subprocess.Popen(["sleep", "600"], start_new_session=True)
        print("leaving")
    """
    result = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=20.0))
    assert result.ok and result.stdout == "leaving\n"
    assert_group_gone(result.pid)
    if IS_ROOT:
        assert processes_of(result.uid) == []


@pytest.mark.skipif(not IS_ROOT, reason="RLIMIT_NPROC bounds a fork bomb only for its own uid")
@pytest.mark.asyncio
async def test_fork_bomb_is_bounded_and_cleaned_up() -> None:
    code = """
        import os
        while True:
            try:
                pid = os.fork()
            except OSError:
                continue
            if pid == 0:
                with open("forks", "a") as f:
                    f.write("x\\n")
    """
    limit = 8
    result = await run_sandboxed(python(code), keep=True,
                                 limits=SandboxLimits(wall_s=2.0, max_processes=limit))
    try:
        forks = (result.workdir / "forks").read_text().count("x")
    finally:
        import shutil
        shutil.rmtree(result.workdir)
    assert result.timed_out and result.signal == signal.SIGKILL
    assert 1 <= forks <= limit - 1  # the first process counts too
    assert_group_gone(result.pid)
    assert processes_of(result.uid) == []


@pytest.mark.asyncio
async def test_memory_bomb_hits_the_address_space_limit() -> None:
    code = """
        chunks = []
        while True:
            chunks.append(bytearray(16 << 20))
    """
    result = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=30.0, memory_mb=256))
    assert not result.timed_out
    assert result.returncode == 1
    assert "MemoryError" in result.stderr


@pytest.mark.asyncio
async def test_a_gigabyte_of_output_is_drained_not_kept() -> None:
    cap = 100_000
    code = """
        import os, sys
        chunk = b"y" * (1 << 20)
        for _ in range(1024):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        sys.stderr.write("e" * 300000)
    """
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    result = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=120.0,
                                                                    max_output_bytes=cap))
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.ok, result.stderr[-500:]
    assert result.stdout_bytes == 1 << 30 and result.stdout_truncated
    assert len(result.stdout) == cap and set(result.stdout) == {"y"}
    assert result.stderr_bytes == 300000 and len(result.stderr) == cap
    assert (peak_after - peak_before) * 1024 < 64 << 20  # far below the gigabyte


@pytest.mark.asyncio
async def test_endless_output_is_capped_and_stopped_at_the_limit() -> None:
    code = """
        import sys
        while True:
            sys.stdout.write("z" * 65536)
    """
    result = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=1.0, max_output_bytes=5000))
    assert result.timed_out and result.signal == signal.SIGKILL
    assert len(result.stdout) == 5000 and result.stdout_truncated
    assert result.stdout_bytes > 5000  # it kept writing and was drained meanwhile


@pytest.mark.skipif(not IS_ROOT, reason="without root the program keeps the engine's uid")
@pytest.mark.asyncio
async def test_writes_outside_the_workdir_fail_or_stay_contained() -> None:
    outside = Path(tempfile.mkdtemp(prefix="sandbox-outside-", dir=Path(__file__).parent))
    os.chmod(outside, 0o755)  # visible to everyone, writable by root only
    tag = f"{os.getpid()}-{id(outside)}"
    scratch_name = f"/tmp/sandbox-escape-{tag}"
    code = f"""
        import os
        for target in ({str(outside / 'pwned.txt')!r}, "../sibling-{tag}", {scratch_name!r}):
            try:
                with open(target, "w") as f:
                    f.write("escaped")
                print("wrote", target)
            except OSError as exc:
                print("refused", target, type(exc).__name__)
    """
    try:
        result = await run_sandboxed(python(code))
        assert result.ok, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"refused {outside / 'pwned.txt'} PermissionError"
        assert not (outside / "pwned.txt").exists()
        # /tmp is a private tmpfs inside the sandbox: these writes vanish with it.
        assert not (result.workdir.parent / f"sibling-{tag}").exists()
        assert not os.path.exists(scratch_name)
    finally:
        for leftover in (outside / "pwned.txt", Path(scratch_name), Path(f"/tmp/sibling-{tag}")):
            leftover.unlink(missing_ok=True)
        outside.rmdir()


@pytest.mark.asyncio
async def test_network_is_off_unless_allowed() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"pong")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = f"""
        import socket
        try:
            with socket.create_connection(("127.0.0.1", {port}), timeout=5) as s:
                print("connected", s.recv(4).decode())
        except OSError as exc:
            print("failed", type(exc).__name__)
    """
    async with server:
        isolated = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=20.0))
        allowed = await run_sandboxed(python(code), limits=SandboxLimits(wall_s=20.0, network=True))
    assert allowed.stdout.strip() == "connected pong"  # the server is reachable at all
    assert not allowed.network_isolated
    if IS_ROOT:  # this project's machines run as root: isolation must be there
        assert isolated.network_isolated
        assert isolated.stdout.startswith("failed"), isolated.stdout
    else:
        assert isolated.stdout.startswith("failed") == isolated.network_isolated


@pytest.mark.asyncio
async def test_cancelled_call_kills_the_program() -> None:
    marker = f"sandbox-cancel-marker-{os.getpid()}"
    code = f"import time\n{marker!r}\nwhile True: time.sleep(0.05)"
    task = asyncio.ensure_future(run_sandboxed(python(code), limits=SandboxLimits(wall_s=60.0)))
    await asyncio.sleep(0.5)
    assert running_with(marker)  # it started
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):  # the kill is immediate; reaping by the supervisor follows
        if not running_with(marker):
            break
        await asyncio.sleep(0.05)
    assert not running_with(marker)


@pytest.mark.asyncio
async def test_program_dies_with_the_engine(tmp_path: Path) -> None:
    marker = f"sandbox-engine-death-marker-{os.getpid()}"
    engine = tmp_path / "engine.py"
    engine.write_text(textwrap.dedent(f"""
        import asyncio, os, sys
        from autocomp_core.sandbox import SandboxLimits, run_sandboxed

        async def main():
            code = "import time\\n{marker!r}\\nwhile True: time.sleep(0.05)"
            asyncio.ensure_future(run_sandboxed([sys.executable, "-c", code],
                                                limits=SandboxLimits(wall_s=60.0)))
            def running():
                for pid in filter(str.isdigit, os.listdir("/proc")):
                    try:
                        if {marker!r}.encode() in open(f"/proc/{{pid}}/cmdline", "rb").read():
                            return True
                    except OSError:
                        pass
                return False

            for _ in range(100):
                await asyncio.sleep(0.05)
                if running():
                    print("started", flush=True)
                    break
            os._exit(0)  # the engine crashes without cleaning up

        asyncio.run(main())
    """))
    proc = await asyncio.create_subprocess_exec(PY, str(engine), stdout=asyncio.subprocess.PIPE,
                                                cwd=Path(__file__).parent.parent,
                                                env={**os.environ, "TMPDIR": str(tmp_path)})  # its leftovers
    out, _ = await proc.communicate()
    assert out == b"started\n"
    for _ in range(100):
        if not running_with(marker):
            break
        await asyncio.sleep(0.05)
    assert not running_with(marker)


def running_with(marker: str) -> list[int]:
    """Pids whose command line contains ``marker`` (zombies have none, so they do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def test_works_under_anyio() -> None:
    import anyio

    async def main() -> str:
        result = await run_sandboxed(python("print('via anyio')"))
        return result.stdout

    assert anyio.run(main, backend="asyncio") == "via anyio\n"


@pytest.mark.asyncio
async def test_engine_environment_stays_visible_when_it_lives_under_tmp(tmp_path, monkeypatch):
    """A checkout under /tmp (as in a CI clone) must stay importable inside the sandbox,
    although /tmp itself is replaced by a fresh one."""
    lib = Path(tempfile.mkdtemp(prefix="engine-lib-", dir="/tmp"))
    lib.chmod(0o755)
    (lib / "engine_side_module.py").write_text("VALUE = 42\n")
    (lib / "engine_side_module.py").chmod(0o644)
    monkeypatch.syspath_prepend(str(lib))
    result = await run_sandboxed(
        [sys.executable, "-c", "import engine_side_module as m; print(m.VALUE)"],
        env={"PYTHONPATH": str(lib)}, limits=SandboxLimits(wall_s=30))
    assert result.ok, result.stderr
    assert result.stdout.strip() == "42"
    outside = await run_sandboxed([sys.executable, "-c", "import os; print(os.listdir('/tmp'))"],
                                  limits=SandboxLimits(wall_s=30))
    assert lib.name in outside.stdout  # the engine's path is there ...
    assert "pytest-of" not in outside.stdout  # ... and nothing else of the real /tmp


@pytest.mark.asyncio
async def test_work_dir_paths_are_reported_relative():
    code = "import os; print(os.path.join(os.getcwd(), 'kernel.c')); raise SystemExit(os.getcwd())"
    result = await run_sandboxed([sys.executable, "-c", code], limits=SandboxLimits(wall_s=30))
    assert result.stdout.strip() == "kernel.c"
    assert result.stderr.strip() == "."
