"""Board mode against a real OpenSSH server on 127.0.0.1 whose remote command runs qemu-user."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from autocomp_rvv.backend import RvvBackend

from autocomp_core import EvalContext, FailureKind

CANDIDATES = Path(__file__).parent / "candidates"
QEMU = "qemu-riscv64 -cpu rv64,v=true,vlen=128,vext_spec=v1.0"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """An sshd on a free loopback port accepting one generated key for the current user."""
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    assert Path(sshd_bin).is_file(), "openssh-server is required (see apt-packages.txt)"
    d = tmp_path_factory.mktemp("sshd")
    d.chmod(0o755)
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
        )
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    (d / "authorized_keys").chmod(0o600)
    port = _free_port()
    (d / "sshd_config").write_text(f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {d / "host_key"}
AuthorizedKeysFile {d / "authorized_keys"}
PidFile {d / "sshd.pid"}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
LogLevel ERROR
""")
    if os.geteuid() == 0:  # sshd run by root insists on its privilege separation directory
        Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sshd_bin, "-D", "-e", "-f", str(d / "sshd_config")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.05)
    (d / "remote").mkdir()
    yield {
        "host": "127.0.0.1",
        "port": port,
        "user": getpass.getuser(),
        "key": str(d / "client_key"),
        "remote_dir": str(d / "remote"),
        "run_prefix": QEMU,
        "reps": 3,
    }
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def other_key(tmp_path) -> Path:
    """A key the server does not know."""
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    return other


async def _evaluate(board: dict, code: str):
    backend = RvvBackend(hardware={"core": "k230", "board": board})
    problem = backend.load_problem("vadd_f32")
    return backend, await backend.evaluate(problem, code, EvalContext())


@pytest.mark.asyncio
async def test_board_mode_reads_the_kernels_own_cycles(sshd):
    backend, result = await _evaluate(sshd, (CANDIDATES / "vadd_f32_rvv.c").read_text())
    assert result.correct, result.feedback
    # the metric is what rdcycle measured on the "board", not the model
    assert result.metric == result.extra["board_cycles"] > 0
    assert result.extra["board_instret"] > 0 and result.extra["modelled_cycles"] > 0
    assert "Measured on the board 127.0.0.1" in result.feedback
    assert list(Path(sshd["remote_dir"]).iterdir()) == []  # the program was removed afterwards
    assert all(c.ok for c in backend.doctor())


@pytest.mark.asyncio
async def test_unreachable_board_is_an_infrastructure_error(sshd):
    board = {**sshd, "port": _free_port(), "timeout_s": 10}
    _, result = await _evaluate(board, (CANDIDATES / "vadd_f32_rvv.c").read_text())
    assert result.failure is FailureKind.INFRA_ERROR and "127.0.0.1" in result.feedback


@pytest.mark.asyncio
async def test_wrong_key_is_an_infrastructure_error(sshd, other_key):
    _, result = await _evaluate(
        {**sshd, "key": str(other_key)}, (CANDIDATES / "vadd_f32_rvv.c").read_text()
    )
    assert result.failure is FailureKind.INFRA_ERROR and "board" in result.feedback


@pytest.mark.asyncio
async def test_a_kernel_that_fails_on_the_board_is_wrong(sshd):
    # correct under local qemu at VLEN 256 only; the "board" runs at VLEN 128 and the
    # harness's own check catches it there
    board = {**sshd}
    backend = RvvBackend(hardware={"check_vlens": [256], "board": board})
    problem = backend.load_problem("vadd_f32")
    code = (CANDIDATES / "vadd_f32_fixed_vlen.c").read_text()
    result = await backend.evaluate(problem, code, EvalContext())
    assert result.failure is FailureKind.WRONG_ANSWER and result.feedback.startswith(
        "board 127.0.0.1"
    )


@pytest.mark.asyncio
async def test_every_timed_call_on_the_board_is_checked(sshd):
    """A kernel that caches its answer by size passes every check case (each has a new size)
    and Spike's single call, but skips the work in the board's timing loop: each timed call
    now gets fresh inputs in fresh buffers and is checked."""
    code = (Path(__file__).parent / "adversarial" / "vadd_f32_caches_on_linux.c").read_text()
    _, result = await _evaluate(sshd, code)
    assert result.failure is FailureKind.WRONG_ANSWER, result.feedback
    assert result.feedback.startswith("board 127.0.0.1") and "never written" in result.feedback
