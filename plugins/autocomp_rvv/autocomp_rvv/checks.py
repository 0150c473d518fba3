"""Correctness runs under qemu-user: the candidate's process computes, the trusted side judges.

The runner (the harness's RVV_RUNNER build linked with the kernel: no libc, no checks) sets up
every case of the problem, calls the kernel and appends the outputs to a file. Nothing it prints
or returns is a verdict. The evaluator

* runs it in a fresh directory holding only a copy of the program, so nothing it writes there
  can reach a later stage (Spike, the verifier), and reads its outputs file after it ended,
  never through a link;
* compares qemu's log of its system calls (``-strace``: written by qemu, and a program can add
  to it only by a system call, which is logged first) with the calls of the same runner
  linked with the baseline: a kernel that makes any system call, by an instruction of its own
  or by calling code it found, is refused;
* names a fault from qemu's log (signal and address) and the layout the runner printed;
* hands the outputs, by value, to the verifier (timed.py), which sets every case up again from
  the seed and judges them.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FailureKind, private_workdir
from autocomp_core.sandbox import SandboxLimits, SandboxResult, run_sandboxed

from .runner import RunFailure, qemu_argv

RUNNER_OUTPUTS = "outputs.bin"  # rvv_harness_main.h: RUNNER_OUTPUTS
#: The most a runner's outputs may hold (every case's outputs with their page leads).
MAX_OUTPUTS_BYTES = 256 << 20
#: qemu's system-call log of an honest runner is a few KiB per case.
MAX_LOG_BYTES = 1 << 20

_SYSCALL = re.compile(r"^\d+ (\w+)\((.*)$")
_SIGNAL = re.compile(r"--- (SIG\w+) \{si_signo=\w+, si_code=[^,]*, si_addr=(0x[0-9a-fA-F]+)\} ---")
#: Calls whose arguments do not depend on where memory lies: compared whole (an fd, a path).
_COMPARED_WHOLE = ("write", "openat", "exit_group", "exit", "close")


@dataclass(frozen=True)
class Buffer:
    name: str
    data: int
    size: int
    elem: int
    map: int
    map_len: int
    sealed: bool


def syscall_key(line: str) -> str | None:
    """What must agree between a runner's call and the reference's: the name, and the
    arguments where they do not depend on addresses. None: not a system-call line."""
    m = _SYSCALL.match(line)
    if m is None:
        return line.split(" ", 1)[1].strip() if re.match(r"^\d+ ", line) else None
    name, rest = m.group(1), m.group(2)
    args = rest.split(")", 1)[0]
    if name in _COMPARED_WHOLE:
        return f"{name}({args if name != 'write' else args.split(',', 1)[0]})"
    if name == "mmap":  # mmap(NULL,LENGTH,...): the length and flags are the harness's
        return f"mmap({args})"
    return name


def syscall_log(stderr: str) -> list[tuple[str, str]]:
    """(key, line) of every system call in qemu's log, in order."""
    calls = []
    for line in stderr.splitlines():
        key = syscall_key(line)
        if key is not None:
            calls.append((key, line.strip()))
    return calls


def parse_layout(stdout: str) -> list[tuple[str, list[Buffer]]]:
    """Per case the runner started: its description and buffers (only for wording a fault)."""
    cases: list[tuple[str, list[Buffer]]] = []
    for line in stdout.splitlines():
        parts = line.split()
        if line.startswith("CASE ") and len(parts) > 1:
            cases.append((f"case {parts[1]} {' '.join(parts[2:])}".strip(), []))
        elif line.startswith("BUF ") and len(parts) == 8 and cases:
            try:
                nums = [int(v) for v in parts[2:7]]
            except ValueError:
                continue
            data, size, elem, start, length = nums
            cases[-1][1].append(Buffer(parts[1], data, size, elem, start, length, parts[7] == "1"))
    return cases


def describe_fault(signal: str, addr: int, buffers: list[Buffer]) -> str:
    """The same wording the harness's own fault handler used."""
    for b in buffers:
        elems = b.size // b.elem if b.elem else 0
        if b.data + b.size <= addr < b.map + b.map_len:
            return (
                f"out-of-bounds access past the end of `{b.name}`: element index "
                f"{(addr - b.data) // max(b.elem, 1)}, but it has {elems} elements"
            )
        if b.data <= addr < b.data + b.size and b.sealed:
            return (
                f"write into the read-only input `{b.name}` at element index "
                f"{(addr - b.data) // max(b.elem, 1)}"
            )
        if b.map <= addr < b.data:
            return (
                f"out-of-bounds access before the start of `{b.name}` "
                f"(element index -{(b.data - addr + b.elem - 1) // max(b.elem, 1)})"
            )
    what = {"SIGILL": "illegal instruction", "SIGBUS": "misaligned or invalid access"}
    return f"{what.get(signal, 'invalid memory access')} at address {addr:#x}"


def read_outputs(folder: Path) -> bytes | None:
    """The runner's outputs file, if it is a plain file of bounded size (never followed
    through a link the program may have planted)."""
    try:
        fd = os.open(folder / RUNNER_OUTPUTS, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_OUTPUTS_BYTES:
            return None
        return f.read(MAX_OUTPUTS_BYTES + 1)


async def run_cases(
    qemu: str, program: Path, vlen: int, seed: int, timeout_s: float
) -> tuple[SandboxResult, bytes | None]:
    """Run a runner at one VLEN in a fresh directory; (its sandbox result, its outputs)."""
    with private_workdir("autocomp-rvv-run-") as folder:
        folder.chmod(0o777)  # the sandbox may run it as another uid
        local = folder / program.name
        shutil.copyfile(program, local)
        local.chmod(0o755)
        limits = SandboxLimits(
            wall_s=timeout_s, memory_mb=None, max_output_bytes=MAX_LOG_BYTES, file_size_mb=256
        )
        result = await run_sandboxed(
            [*qemu_argv(qemu, vlen), "-strace", str(local), str(seed)],
            cwd=folder,
            limits=limits,
        )
        return result, read_outputs(folder)


async def reference_syscalls(qemu: str, reference: Path, timeout_s: float) -> list[str]:
    """The system calls of the runner linked with the baseline (the same for any seed)."""
    result, outputs = await run_cases(qemu, reference, 128, 1, timeout_s)
    calls = [key for key, _ in syscall_log(result.stderr)]
    if not result.ok or outputs is None or not calls or calls[-1] != "exit_group(0)":
        raise RunFailure(
            FailureKind.INFRA_ERROR,
            "the baseline's runner did not run cleanly: "
            f"{(result.stdout + result.stderr).strip()[-400:]}",
        )
    return calls


async def check_at_vlen(
    qemu: str, program: Path, vlen: int, seed: int, timeout_s: float, expected: list[str]
) -> bytes:
    """Every case at one VLEN; the outputs for the verifier, or RunFailure."""
    r, outputs = await run_cases(qemu, program, vlen, seed, timeout_s)
    where = f"VLEN={vlen}"
    if r.timed_out:
        raise RunFailure(
            FailureKind.TIMEOUT,
            f"{where}: the checks did not finish within {timeout_s:.0f} s "
            "(infinite loop? a strip-mining loop whose vl never reaches 0?)",
            r.stdout,
            r.stderr[-4000:],
        )
    stdout, stderr = r.stdout, r.stderr
    calls = syscall_log(stderr)
    fault = _SIGNAL.search(stderr)
    # the calls made before a fault (or all of them) must be the harness's own, in its order
    for i, (key, line) in enumerate(calls):
        if i >= len(expected) or key != expected[i]:
            raise RunFailure(
                FailureKind.REJECTED,
                f"{where}: the program made a system call the harness does not make "
                f"(`{line.split(' ', 1)[-1][:120]}`): a kernel may not make system calls, "
                "directly or through code it finds",
                stdout[-4000:],
                stderr[-4000:],
            )
    if fault is not None:
        cases = parse_layout(stdout)
        desc, buffers = cases[-1] if cases else ("setup", [])
        message = (
            f"{where}: {desc}: {describe_fault(fault.group(1), int(fault.group(2), 16), buffers)}"
        )
        raise RunFailure(FailureKind.CRASH, message, stdout[-4000:], stderr[-4000:])
    if r.stderr_truncated or len(calls) != len(expected) or outputs is None or not r.ok:
        how = f"signal {r.signal}" if r.signal else f"exit code {r.returncode}"
        raise RunFailure(
            FailureKind.CRASH,
            f"{where}: the program ended before every case had run ({how}; "
            f"{len(calls)} of the harness's {len(expected)} system calls)",
            stdout[-4000:],
            stderr[-4000:],
        )
    return outputs
