"""Building a candidate: one compile of the kernel, linked into a Linux and a bare-metal program.

The kernel is compiled once, freestanding and position-independent of any libc
(``riscv64-unknown-elf``, ``-mcmodel=medany``), so the same object links into

* the Linux user-mode harness (static, run by qemu-user or a real board), and
* the bare-metal harness (run by Spike for exact instruction counts).

Harness objects do not depend on the candidate and are compiled once per problem.
"""
from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from autocomp_core.backend import FailureKind
from autocomp_core.sandbox import SandboxLimits, run_sandboxed

from .problems import RUNTIME_DIR, ProblemSpec
from .toolchain import ARCH_FLAGS, Tools

CANDIDATE = "candidate.c"
#: Symbols a kernel may leave undefined: the compiler emits calls to these on its own.
ALLOWED_UNDEFINED = {"memcpy", "memset", "memmove"}
#: Constructs a kernel must not contain: they read or forge the measurement, or talk to the host.
FORBIDDEN = [
    (re.compile(r"\b(minstret|mcycle|rdcycle|rdinstret|rdtime)\b"), "performance counters"),
    (re.compile(r"\bcsr[rwsc]i?\b"), "CSR instructions"),
    (re.compile(r"\b(tohost|fromhost)\b"), "host-interface symbols"),
    (re.compile(r"\b(ecall|ebreak)\b"), "system calls"),
    (re.compile(r"^\s*(int|void)\s+main\s*\(", re.MULTILINE), "a main function"),
]
COMPILE_LIMITS = SandboxLimits(wall_s=60.0, memory_mb=4096, max_output_bytes=200_000)


class BuildFailure(Exception):
    """The candidate did not build; ``feedback`` is what the next prompt should see."""

    def __init__(self, kind: FailureKind, feedback: str, stderr: str = "") -> None:
        super().__init__(feedback)
        self.kind = kind
        self.feedback = feedback
        self.stderr = stderr


@dataclass
class Built:
    linux: Path
    baremetal: Path


def screen_source(code: str) -> None:
    """Reject constructs that would tamper with measurement, naming the line."""
    # blank out /* */ comments, keeping line numbers
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), code, flags=re.DOTALL)
    for regex, what in FORBIDDEN:
        for lineno, line in enumerate(code.splitlines(), 1):
            stripped = line.split("//")[0]
            m = regex.search(stripped)
            if m:
                raise BuildFailure(FailureKind.REJECTED,
                                   f"line {lineno}: `{m.group(0)}` is not allowed in a kernel ({what}); "
                                   "the kernel may only compute its outputs")


def kernel_flags(spec: ProblemSpec, autovectorize: bool) -> list[str]:
    flags = ["--target=riscv64-unknown-elf", *ARCH_FLAGS, "-mcmodel=medany", "-O2", "-ffreestanding",
             "-fno-pic", "-Wall", "-Wno-unused-function", "-I", str(spec.folder),
             "-include", str(spec.kernel_header)]
    if not autovectorize:
        flags += ["-fno-vectorize", "-fno-slp-vectorize"]
    return flags


def _harness_flags(spec: ProblemSpec, baremetal: bool) -> list[str]:
    common = [*ARCH_FLAGS, "-O2", "-I", str(RUNTIME_DIR), "-I", str(spec.folder),
              f"-DH_RTOL={spec.rtol!r}", f"-DH_ATOL={spec.atol!r}", "-fno-vectorize", "-fno-slp-vectorize"]
    if baremetal:
        return ["--target=riscv64-unknown-elf", "-mcmodel=medany", "-ffreestanding", "-fno-pic",
                "-DRVV_BAREMETAL", *common]
    return ["--target=riscv64-linux-gnu", *common]


def tidy_compiler_output(text: str, workdir: Path) -> str:
    """Compiler messages with paths shortened so line numbers read as the candidate's own."""
    text = text.replace(str(workdir) + "/", "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[:60]) + ("\n[... more messages cut ...]" if len(lines) > 60 else "")


class Builder:
    """Compiles candidates for one toolchain; caches harness objects per problem."""

    def __init__(self, tools: Tools) -> None:
        self.tools = tools
        self._cache = Path(tempfile.mkdtemp(prefix="autocomp-rvv-cache-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._cache, True)
        self._locks: dict[str, asyncio.Lock] = {}

    async def _run(self, argv: list[str], workdir: Path, what: str) -> str:
        result = await run_sandboxed(argv, cwd=workdir, limits=COMPILE_LIMITS)
        if result.timed_out:
            raise BuildFailure(FailureKind.TIMEOUT, f"{what} did not finish within {COMPILE_LIMITS.wall_s:.0f} s")
        if not result.ok:
            raise BuildFailure(FailureKind.COMPILE_ERROR,
                               f"{what} failed:\n{tidy_compiler_output(result.stderr + result.stdout, workdir)}",
                               result.stderr)
        return result.stdout

    async def _harness_objects(self, spec: ProblemSpec) -> dict[str, bytes]:
        """crt.o and both harness objects, compiled once per problem (trusted sources)."""
        key = spec.id
        # one lock per event loop: an asyncio.Lock must not be shared across loops
        lock = self._locks.setdefault(f"{key}@{id(asyncio.get_running_loop())}", asyncio.Lock())
        folder = self._cache / key
        names = ("harness_linux.o", "harness_bm.o", "crt.o")
        async with lock:
            if not all((folder / n).is_file() for n in names):
                folder.mkdir(parents=True, exist_ok=True)
                folder.chmod(0o777)  # the sandbox may run the compiler as another uid
                clang = self.tools.clang
                try:
                    await self._run([clang, *_harness_flags(spec, False), "-c", str(spec.harness),
                                     "-o", "harness_linux.o"], folder, "harness build (Linux)")
                    await self._run([clang, *_harness_flags(spec, True), "-c", str(spec.harness),
                                     "-o", "harness_bm.o"], folder, "harness build (bare metal)")
                    await self._run([clang, "--target=riscv64-unknown-elf", *ARCH_FLAGS, "-mcmodel=medany",
                                     "-c", str(RUNTIME_DIR / "crt.S"), "-o", "crt.o"], folder, "crt build")
                except BuildFailure as exc:  # our own sources failed: not the candidate's fault
                    raise BuildFailure(FailureKind.INFRA_ERROR, exc.feedback, exc.stderr) from None
            return {n: (folder / n).read_bytes() for n in names}

    async def build(self, spec: ProblemSpec, code: str, workdir: Path, autovectorize: bool = False) -> Built:
        screen_source(code)
        objects = await self._harness_objects(spec)
        for name, data in objects.items():
            (workdir / name).write_bytes(data)
        (workdir / CANDIDATE).write_text(code)
        await self._run([self.tools.clang, *kernel_flags(spec, autovectorize), "-c", CANDIDATE,
                         "-o", "kernel.o"], workdir, "compiling the candidate")
        await self._check_symbols(spec, workdir)
        await self._run([self.tools.clang, "--target=riscv64-linux-gnu", "-static", "-fuse-ld=lld",
                         "harness_linux.o", "kernel.o", "-lm", "-o", "prog_linux"], workdir, "linking (Linux)")
        await self._run([self.tools.lld, "-T", str(RUNTIME_DIR / "link.ld"), "crt.o", "harness_bm.o",
                         "kernel.o", "-o", "prog.elf"], workdir, "linking (bare metal)")
        return Built(linux=workdir / "prog_linux", baremetal=workdir / "prog.elf")

    async def _check_symbols(self, spec: ProblemSpec, workdir: Path) -> None:
        listing = await self._run([self.tools.nm, "kernel.o"], workdir, "listing symbols")
        defined, undefined = set(), set()
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined.add(parts[1])
            elif len(parts) == 3 and parts[1] in "TtWw":
                defined.add(parts[2])
        if spec.function not in defined:
            raise BuildFailure(FailureKind.COMPILE_ERROR,
                               f"the candidate does not define the function `{spec.function}` (see kernel.h)")
        missing = sorted(undefined - ALLOWED_UNDEFINED)
        if missing:
            names = ", ".join(f"`{m}`" for m in missing)
            raise BuildFailure(FailureKind.COMPILE_ERROR,
                               f"the kernel calls {names}, which is not available: kernels run without libc "
                               "or libm (bare metal); write the code inline (e.g. a polynomial exp)")
