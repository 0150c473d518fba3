"""Running built programs in the sandbox: correctness under qemu-user, instruction counts on Spike."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FailureKind, private_workdir
from autocomp_core.sandbox import SandboxLimits, run_sandboxed

from .trace import Insn, RegionTooLarge, TraceError, parse_region, reported_instret

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


#: Longest log line read at once (a vector access at VLEN 512, e8 m8, logs 512 entries: ~20 KiB).
_MAX_LINE = 1 << 20


def _plain_lines(path: Path) -> Iterator[str]:
    """A file's lines, read one at a time; none when it is missing or not a plain file (never
    through a link). Spike's log can reach its size cap (1 GiB): it is never held whole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return
        while line := f.readline(_MAX_LINE):
            yield line.decode(errors="replace")


def spike_isa(vlen: int) -> str:
    return "rv64gcv" if vlen == 128 else f"rv64gcv_zvl{vlen}b"


@dataclass
class SpikeRun:
    insns: list[Insn]
    instret: int
    wall_s: float
    stdout: str  # the harness's buffer layout (printed before the kernel ran) and its INSTRET line


async def spike_count(spike: str, program: Path, vlen: int, timeout_s: float) -> SpikeRun:
    """Run the bare-metal program on Spike with a commit log; return the kernel region.
    Spike runs in a fresh directory holding only a copy of the program: no earlier stage that
    ran candidate code could plant anything there (a link in place of the log)."""
    with private_workdir("autocomp-rvv-spike-") as folder:
        folder.chmod(0o777)  # the sandbox may run it as another uid
        local = folder / program.name
        shutil.copyfile(program, local)
        log = folder / "spike.log"
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
                local.name,
            ],
            cwd=folder,
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
            insns = parse_region(_plain_lines(log))
        except RegionTooLarge as exc:
            raise RunFailure(
                FailureKind.REJECTED,
                f"the timed run on Spike: {exc}; the evaluator holds no more (an honest kernel "
                "for this problem needs far fewer)",
                result.stdout,
                result.stderr,
            ) from None
        except TraceError as exc:
            if "access_fault" in str(exc):  # PMP: the host interface's page, from user mode
                raise RunFailure(
                    FailureKind.REJECTED,
                    f"the timed run on Spike: {exc}: an access outside its outputs and its own "
                    "stack (the host interface, which the kernel's user mode cannot reach)",
                    result.stdout,
                    result.stderr,
                ) from None
            stopped = "" if result.ok else f" (Spike exit code {result.returncode})"
            raise RunFailure(
                FailureKind.CRASH, f"Spike run: {exc}{stopped}", result.stdout, result.stderr
            ) from None
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
