"""Building a candidate: one compile of the kernel, linked into a Linux and a bare-metal program.

The kernel is compiled once, freestanding and position-independent of any libc
(``riscv64-unknown-elf``, ``-mcmodel=medany``), so the same object links into

* the Linux user-mode harness (static, run by qemu-user or a real board), and
* the bare-metal harness (run by Spike for exact instruction counts).

Harness objects do not depend on the candidate and are compiled once per problem, as is the
verifier (the Linux harness linked with the problem's baseline) that checks the outputs of the
timed run without the candidate in its process.

A kernel may only compute its outputs: the source may not touch counters, CSRs or the host
interface, hold inline assembly or run code outside its calls, and the compiled object is
checked for the instructions and sections such tricks need (a macro can hide a word from the
source check, not from the disassembly).
"""

from __future__ import annotations

import asyncio
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

from autocomp_core.backend import FailureKind
from autocomp_core.sandbox import SandboxLimits, run_sandboxed
from autocomp_core.workdirs import HeldDir

from .problems import RUNTIME_DIR, ProblemSpec
from .toolchain import ARCH_FLAGS, Tools

CANDIDATE = "candidate.c"
VERIFIER = "prog_verify"
#: Symbols a kernel may leave undefined: the compiler emits calls to these on its own.
ALLOWED_UNDEFINED = {"memcpy", "memset", "memmove"}
#: Constructs a kernel must not contain: they read or forge the measurement, or talk to the host.
FORBIDDEN = [
    (re.compile(r"\b(minstret|mcycle|rdcycle|rdinstret|rdtime)\b"), "performance counters"),
    (re.compile(r"\bcsr[rwsc]i?\b"), "CSR instructions"),
    (re.compile(r"\b(tohost|fromhost)\b"), "host-interface symbols"),
    (re.compile(r"\b(ecall|ebreak)\b"), "system calls"),
    (re.compile(r"^\s*(int|void)\s+main\s*\(", re.MULTILINE), "a main function"),
    (re.compile(r"\b(asm|__asm__|__asm)\b"), "inline assembly (use the RVV intrinsics)"),
    (
        re.compile(r"\b(constructor|destructor|init_array|fini_array)\b|\bsection\s*\("),
        "code or data placed to run outside the kernel's calls",
    ),
]
#: Sections that make code run outside the kernel's calls.
FORBIDDEN_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")
#: CSRs a compiled kernel may touch: the vector and floating-point state (vlenb, frm...).
ALLOWED_CSRS = {"vstart", "vxsat", "vxrm", "vcsr", "vl", "vtype", "vlenb", "fflags", "frm", "fcsr"}
_CSR_OP = re.compile(r"^(csrr[wsc]i?|csr[rwsc]i?|rd(cycle|time|instret)h?|f[rs](csr|rm|flags)i?)$")
_SYSTEM_OP = re.compile(
    r"^(ecall|ebreak|c\.ebreak|wfi|mret|sret|dret|uret|sfence\.\S+|hfence\.\S+)$"
)
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
    verifier: Path  # the trusted harness + baseline program that checks the timed run's outputs


def screen_source(code: str) -> None:
    """Reject constructs that would tamper with measurement, naming the line."""
    # blank out /* */ comments, keeping line numbers
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), code, flags=re.DOTALL)
    for regex, what in FORBIDDEN:
        for lineno, line in enumerate(code.splitlines(), 1):
            stripped = line.split("//")[0]
            m = regex.search(stripped)
            if m:
                raise BuildFailure(
                    FailureKind.REJECTED,
                    f"line {lineno}: `{m.group(0)}` is not allowed in a kernel ({what}); "
                    "the kernel may only compute its outputs",
                )


def kernel_flags(spec: ProblemSpec, autovectorize: bool) -> list[str]:
    flags = [
        "--target=riscv64-unknown-elf",
        *ARCH_FLAGS,
        "-mcmodel=medany",
        "-O2",
        "-ffreestanding",
        "-fno-pic",
        "-Wall",
        "-Wno-unused-function",
        "-I",
        str(spec.folder),
        "-include",
        str(spec.kernel_header),
    ]
    if not autovectorize:
        flags += ["-fno-vectorize", "-fno-slp-vectorize"]
    return flags


def _harness_flags(spec: ProblemSpec, baremetal: bool) -> list[str]:
    common = [
        *ARCH_FLAGS,
        "-O2",
        "-I",
        str(RUNTIME_DIR),
        "-I",
        str(spec.folder),
        f"-DH_RTOL={spec.rtol!r}",
        f"-DH_ATOL={spec.atol!r}",
        "-fno-vectorize",
        "-fno-slp-vectorize",
    ]
    if baremetal:
        return [
            "--target=riscv64-unknown-elf",
            "-mcmodel=medany",
            "-ffreestanding",
            "-fno-pic",
            "-DRVV_BAREMETAL",
            *common,
        ]
    return ["--target=riscv64-linux-gnu", *common]


def tidy_compiler_output(text: str, workdir: Path) -> str:
    """Compiler messages with paths shortened so line numbers read as the candidate's own."""
    text = text.replace(str(workdir) + "/", "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[:60]) + ("\n[... more messages cut ...]" if len(lines) > 60 else "")


def _csr_of(op: str, args: str) -> str:
    """The CSR an instruction names (``csrr a0,vlenb`` -> vlenb); FP-state pseudo-ops name theirs."""
    if op.startswith(("fr", "fs")):  # frrm, fsflags, frcsr...: the floating-point CSRs
        return "fcsr"
    if op.startswith("rd"):  # rdcycle, rdtime, rdinstret
        return op[2:]
    operands = [a.strip() for a in args.split(",")]
    return operands[1] if op.startswith("csrr") and len(operands) > 1 else operands[0]


class Builder:
    """Compiles candidates for one toolchain; caches harness objects per problem."""

    def __init__(self, tools: Tools) -> None:
        self.tools = tools
        held = HeldDir("autocomp-rvv-cache-")  # (a killed engine's is swept)
        self._cache = held.path
        self._finalizer = weakref.finalize(self, held.release)
        self._locks: dict[str, asyncio.Lock] = {}

    async def _run(self, argv: list[str], workdir: Path, what: str) -> str:
        result = await run_sandboxed(argv, cwd=workdir, limits=COMPILE_LIMITS)
        if result.timed_out:
            raise BuildFailure(
                FailureKind.TIMEOUT, f"{what} did not finish within {COMPILE_LIMITS.wall_s:.0f} s"
            )
        if not result.ok:
            raise BuildFailure(
                FailureKind.COMPILE_ERROR,
                f"{what} failed:\n{tidy_compiler_output(result.stderr + result.stdout, workdir)}",
                result.stderr,
            )
        return result.stdout

    async def _harness_objects(self, spec: ProblemSpec) -> Path:
        """The folder holding crt.o, both harness objects and the verifier, built once per
        problem from trusted sources."""
        key = spec.id
        # one lock per event loop: an asyncio.Lock must not be shared across loops
        lock = self._locks.setdefault(f"{key}@{id(asyncio.get_running_loop())}", asyncio.Lock())
        folder = self._cache / key
        names = ("harness_linux.o", "harness_bm.o", "crt.o", VERIFIER)
        async with lock:
            if not all((folder / n).is_file() for n in names):
                folder.mkdir(parents=True, exist_ok=True)
                folder.chmod(0o777)  # the sandbox may run the compiler as another uid
                clang = self.tools.clang
                try:
                    await self._run(
                        [
                            clang,
                            *_harness_flags(spec, False),
                            "-c",
                            str(spec.harness),
                            "-o",
                            "harness_linux.o",
                        ],
                        folder,
                        "harness build (Linux)",
                    )
                    await self._run(
                        [
                            clang,
                            *_harness_flags(spec, True),
                            "-c",
                            str(spec.harness),
                            "-o",
                            "harness_bm.o",
                        ],
                        folder,
                        "harness build (bare metal)",
                    )
                    await self._run(
                        [
                            clang,
                            "--target=riscv64-unknown-elf",
                            *ARCH_FLAGS,
                            "-mcmodel=medany",
                            "-c",
                            str(RUNTIME_DIR / "crt.S"),
                            "-o",
                            "crt.o",
                        ],
                        folder,
                        "crt build",
                    )
                    await self._run(
                        [
                            clang,
                            *kernel_flags(spec, False),
                            "-c",
                            str(spec.folder / "baseline.c"),
                            "-o",
                            "baseline.o",
                        ],
                        folder,
                        "baseline build",
                    )
                    await self._run(
                        [
                            clang,
                            "--target=riscv64-linux-gnu",
                            "-static",
                            "-fuse-ld=lld",
                            "harness_linux.o",
                            "baseline.o",
                            "-lm",
                            "-o",
                            VERIFIER,
                        ],
                        folder,
                        "verifier link",
                    )
                except BuildFailure as exc:  # our own sources failed: not the candidate's fault
                    raise BuildFailure(FailureKind.INFRA_ERROR, exc.feedback, exc.stderr) from None
            return folder

    async def build(
        self,
        spec: ProblemSpec,
        code: str,
        workdir: Path,
        autovectorize: bool = False,
        seed: int = 1,
    ) -> Built:
        """Both programs of a candidate; ``seed`` draws the inputs of the bare-metal (timed) run."""
        screen_source(code)
        cached = await self._harness_objects(spec)
        for name in ("harness_linux.o", "harness_bm.o", "crt.o"):
            (workdir / name).write_bytes((cached / name).read_bytes())
        (workdir / CANDIDATE).write_text(code)
        await self._run(
            [
                self.tools.clang,
                *kernel_flags(spec, autovectorize),
                "-c",
                CANDIDATE,
                "-o",
                "kernel.o",
            ],
            workdir,
            "compiling the candidate",
        )
        await self._check_symbols(spec, workdir)
        await self._check_machine_code(workdir)
        await self._run(
            [
                self.tools.clang,
                "--target=riscv64-linux-gnu",
                "-static",
                "-fuse-ld=lld",
                "harness_linux.o",
                "kernel.o",
                "-lm",
                "-o",
                "prog_linux",
            ],
            workdir,
            "linking (Linux)",
        )
        await self._run(
            [
                self.tools.lld,
                "-T",
                str(RUNTIME_DIR / "link.ld"),
                f"--defsym=H_SEED={int(seed)}",
                "crt.o",
                "harness_bm.o",
                "kernel.o",
                "-o",
                "prog.elf",
            ],
            workdir,
            "linking (bare metal)",
        )
        return Built(
            linux=workdir / "prog_linux", baremetal=workdir / "prog.elf", verifier=cached / VERIFIER
        )

    async def _check_machine_code(self, workdir: Path) -> None:
        """Refuse the instructions and sections a kernel needs to talk to the system or run
        outside its calls, whatever macros spelled them."""
        listing = await self._run(
            [self.tools.objdump, "-h", "-d", "kernel.o"], workdir, "disassembling"
        )
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) > 1 and parts[0].isdigit() and parts[1].startswith(FORBIDDEN_SECTIONS):
                raise BuildFailure(
                    FailureKind.REJECTED,
                    f"the kernel has a `{parts[1]}` section: code that runs "
                    "outside the kernel's calls is not allowed",
                )
            fields = line.split("\t")
            if len(fields) < 3 or not fields[0].strip().endswith(":"):
                continue
            op, args = fields[2].strip(), fields[3].strip() if len(fields) > 3 else ""
            if _SYSTEM_OP.match(op) or (
                _CSR_OP.match(op) and _csr_of(op, args) not in ALLOWED_CSRS
            ):
                raise BuildFailure(
                    FailureKind.REJECTED,
                    f"the compiled kernel contains `{(op + ' ' + args).strip()}`"
                    + ": a kernel may not make system calls or touch counters and CSRs",
                )

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
            raise BuildFailure(
                FailureKind.COMPILE_ERROR,
                f"the candidate does not define the function `{spec.function}` (see kernel.h)",
            )
        missing = sorted(undefined - ALLOWED_UNDEFINED)
        if missing:
            names = ", ".join(f"`{m}`" for m in missing)
            raise BuildFailure(
                FailureKind.COMPILE_ERROR,
                f"the kernel calls {names}, which is not available: kernels run without libc "
                "or libm (bare metal); write the code inline (e.g. a polynomial exp)",
            )
