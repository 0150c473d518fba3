"""Board mode: run the Linux harness on a real RISC-V board over SSH and read its own cycles.

The statically linked Linux program is streamed to ``remote_dir`` over the SSH channel
(only a POSIX shell is needed on the board), run in ``bench`` mode, which times the kernel
with ``rdcycle``/``rdinstret`` around each of ``reps`` calls and prints the minima, and removed.
"""

from __future__ import annotations

import asyncio
import shlex
import uuid
from pathlib import Path

from autocomp_core import DoctorCheck, FailureKind

from .config import BoardConfig
from .runner import RunFailure, failure_from_output, kind_of, parse_bench


class BoardError(RuntimeError):
    """The board could not be reached or used (not the candidate's fault)."""


def _connect_options(cfg: BoardConfig) -> dict:
    options: dict = {
        "host": cfg.host,
        "port": cfg.port,
        "username": cfg.user,
        "known_hosts": cfg.known_hosts,
    }  # None: accept the board's key (lab setting)
    if cfg.key:
        options.update(client_keys=[cfg.key], agent_path=None)
    return options


async def run_on_board(cfg: BoardConfig, program: Path, seed: int) -> tuple[int, int]:
    """(cycles, instret) of the kernel measured on the board; RunFailure if it is wrong there."""
    import asyncssh

    remote = f"{cfg.remote_dir.rstrip('/')}/run-{uuid.uuid4().hex[:12]}"
    quoted = shlex.quote(remote)
    try:
        async with asyncio.timeout(cfg.timeout_s):
            async with asyncssh.connect(**_connect_options(cfg)) as conn:
                upload = await conn.run(
                    f"mkdir -p {quoted} && cat > {quoted}/prog && chmod +x {quoted}/prog",
                    input=program.read_bytes(),
                    encoding=None,
                )
                if upload.exit_status != 0:
                    raise BoardError(
                        f"board {cfg.host}: could not copy the program to {remote}: "
                        f"{(upload.stderr or b'').decode(errors='replace').strip()}"
                    )
                try:
                    command = f"cd {quoted} && {cfg.run_prefix} ./prog bench {int(seed)} {cfg.reps}"
                    result = await conn.run(command)
                finally:
                    await conn.run(f"rm -rf {quoted}")
    except TimeoutError:
        raise BoardError(f"board {cfg.host}: no result within {cfg.timeout_s:.0f} s") from None
    except (OSError, asyncssh.Error) as exc:
        raise BoardError(
            f"board {cfg.user}@{cfg.host}:{cfg.port}: {type(exc).__name__}: {exc}"
        ) from None
    stdout, stderr = str(result.stdout or ""), str(result.stderr or "")
    where = f"board {cfg.host}"
    message = failure_from_output(stdout, where)
    if message:
        raise RunFailure(kind_of(message), message, stdout, stderr)
    measured = parse_bench(stdout)
    if measured is None:
        raise RunFailure(
            FailureKind.CRASH,
            f"{where}: the program ended abnormally (exit status "
            f"{result.exit_status}) {stderr.strip()[-300:]}",
            stdout,
            stderr,
        )
    return measured


def doctor_check(cfg: BoardConfig) -> DoctorCheck:
    try:
        import asyncssh  # noqa: F401
    except ImportError:
        return DoctorCheck(
            name="board (ssh)",
            ok=False,
            detail="asyncssh is not installed",
            fix="pip install asyncssh",
        )
    if cfg.key and not Path(cfg.key).expanduser().is_file():
        return DoctorCheck(
            name="board (ssh)",
            ok=False,
            detail=f"key file {cfg.key} not found",
            fix=f"ssh-keygen -t ed25519 -f {cfg.key} and add the .pub to the board",
        )
    return DoctorCheck(
        name="board (ssh)", ok=True, detail=f"{cfg.user}@{cfg.host}:{cfg.port} {cfg.remote_dir}"
    )
