"""Running built programs in the sandbox: correctness under qemu-user, instruction counts on Spike."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autocomp_core.backend import FailureKind
from autocomp_core.sandbox import SandboxLimits, run_sandboxed

from .trace import Insn, TraceError, parse_region, reported_instret

#: Spike stops after this many instructions: a kernel that loops forever ends as a timeout.
SPIKE_MAX_INSTRUCTIONS = 2_000_000
#: Spike's target memory in MiB (the bare-metal program lives at the start of DRAM).
SPIKE_MEMORY_MB = 256


@dataclass
class RunFailure(Exception):
    kind: FailureKind
    feedback: str
    stdout: str = ""
    stderr: str = ""

    def __str__(self) -> str:
        return self.feedback


def qemu_argv(qemu: str, vlen: int) -> list[str]:
    return [qemu, "-cpu", f"rv64,v=true,vlen={vlen},vext_spec=v1.0"]


def failure_from_output(stdout: str, where: str) -> str | None:
    """The harness's FAIL line, prefixed with where it happened, if there is one."""
    for line in stdout.splitlines():
        if line.startswith("FAIL "):
            return f"{where}: {line[5:]}"
    return None


def kind_of(message: str) -> FailureKind:
    memory = (
        "out-of-bounds",
        "read-only input",
        "invalid memory",
        "misaligned",
        "illegal instruction",
    )
    return (
        FailureKind.CRASH if any(word in message for word in memory) else FailureKind.WRONG_ANSWER
    )


async def qemu_check(qemu: str, program: Path, vlen: int, seed: int, timeout_s: float) -> float:
    """Run every correctness case at one VLEN; return the wall time or raise RunFailure."""
    limits = SandboxLimits(wall_s=timeout_s, memory_mb=None, max_output_bytes=64_000)
    result = await run_sandboxed(
        [*qemu_argv(qemu, vlen), str(program), "check", str(seed)],
        cwd=program.parent,
        limits=limits,
    )
    where = f"VLEN={vlen}"
    if result.timed_out:
        raise RunFailure(
            FailureKind.TIMEOUT,
            f"{where}: the checks did not finish within {timeout_s:.0f} s "
            "(infinite loop? a strip-mining loop whose vl never reaches 0?)",
            result.stdout,
            result.stderr,
        )
    message = failure_from_output(result.stdout, where)
    if message:
        raise RunFailure(kind_of(message), message, result.stdout, result.stderr)
    if not result.ok or "PASS" not in result.stdout:
        how = f"signal {result.signal}" if result.signal else f"exit code {result.returncode}"
        raise RunFailure(
            FailureKind.CRASH,
            f"{where}: the program ended abnormally ({how}) {result.stderr.strip()[-400:]}",
            result.stdout,
            result.stderr,
        )
    return result.wall_s


def spike_isa(vlen: int) -> str:
    return "rv64gcv" if vlen == 128 else f"rv64gcv_zvl{vlen}b"


@dataclass
class SpikeRun:
    insns: list[Insn]
    instret: int
    wall_s: float
    stdout: str  # the harness's buffer layout (printed before the kernel ran) and its INSTRET line


async def spike_count(spike: str, program: Path, vlen: int, timeout_s: float) -> SpikeRun:
    """Run the bare-metal program on Spike with a commit log; return the kernel region."""
    log = program.parent / "spike.log"
    limits = SandboxLimits(
        wall_s=timeout_s, memory_mb=None, max_output_bytes=64_000, file_size_mb=1024
    )
    result = await run_sandboxed(
        [
            spike,
            f"--isa={spike_isa(vlen)}",
            f"-m{SPIKE_MEMORY_MB}",
            f"--instructions={SPIKE_MAX_INSTRUCTIONS}",
            "-l",
            "--log-commits",
            f"--log={log.name}",
            program.name,
        ],
        cwd=program.parent,
        limits=limits,
    )
    if result.timed_out:
        raise RunFailure(
            FailureKind.TIMEOUT,
            f"Spike did not finish within {timeout_s:.0f} s",
            result.stdout,
            result.stderr,
        )
    try:
        insns = parse_region(log.read_text(errors="replace") if log.exists() else "")
    except TraceError as exc:
        stopped = "" if result.ok else f" (Spike exit code {result.returncode})"
        raise RunFailure(
            FailureKind.CRASH, f"Spike run: {exc}{stopped}", result.stdout, result.stderr
        ) from None
    finally:
        log.unlink(missing_ok=True)
    instret = reported_instret(result.stdout)
    if instret is None:
        raise RunFailure(
            FailureKind.TIMEOUT if "instructions" in result.stderr else FailureKind.CRASH,
            f"Spike run ended without reporting a count (stopped after at most "
            f"{SPIKE_MAX_INSTRUCTIONS} instructions?) {result.stderr.strip()[-300:]}",
            result.stdout,
            result.stderr,
        )
    # minstret's difference counts the first csrr too; anything else means it was tampered with
    if instret != len(insns) + 1:
        raise RunFailure(
            FailureKind.REJECTED,
            f"instruction counter mismatch: minstret says {instret - 1}, "
            f"the trace holds {len(insns)} instructions",
            result.stdout,
            result.stderr,
        )
    return SpikeRun(insns=insns, instret=len(insns), wall_s=result.wall_s, stdout=result.stdout)


_BENCH = re.compile(r"BENCH cycles=(\d+) instret=(\d+)")


def parse_bench(stdout: str) -> tuple[int, int] | None:
    """(cycles, instret) from the Linux harness's bench mode."""
    m = _BENCH.search(stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None
