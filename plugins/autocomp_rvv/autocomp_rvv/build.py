"""Building a candidate: one compile of the kernel, linked into a Linux and a bare-metal program.

The kernel is compiled once, freestanding and position-independent of any libc
(``riscv64-unknown-elf``, ``-mcmodel=medany``), so the same object links into

* the runner (the harness's RVV_RUNNER build: static Linux, no libc, run by qemu-user), which
  only computes and records every case's outputs (checks.py judges them),
* the bare-metal harness (run by Spike for exact instruction counts), and, in board mode,
* the board program (the harness with glibc and its own checks, run on a real board).

Harness objects do not depend on the candidate and are compiled once per problem, as are the
verifier (the glibc harness linked with the problem's baseline) that judges the outputs of the
runners and of the timed run without the candidate in its process, and the reference runner
(the runner linked with the baseline), whose system calls are the only ones a runner may make.

A kernel may only compute its outputs: the source may not touch counters, CSRs or the host
interface, hold inline assembly or run code outside its calls, and the compiled object is
checked for what such tricks need (a macro can hide a word from the source check, not from
the object): it defines one global symbol, the kernel (nothing of the harness or a libc can
be replaced); its code lies only in executable `.text` sections that hold instructions, not
data; and its disassembly holds no system call or counter access. These checks are courtesies
that name a mistake early: the runs themselves are judged by the trusted side (checks.py,
timed.py), whatever the object held.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FailureKind
from autocomp_core.sandbox import HeldDir, SandboxLimits, run_sandboxed

from .problems import RUNTIME_DIR, ProblemSpec
from .toolchain import ARCH_FLAGS, Tools

CANDIDATE = "candidate.c"
VERIFIER = "prog_verify"
REFERENCE_RUNNER = "prog_check_reference"  # the runner linked with the baseline
#: Section-name prefixes a kernel object may hold besides its code (`.text`): constants, data,
#: and what the assembler adds (relocations, attributes, notes, symbol tables, debug info).
DATA_SECTIONS = (".rodata", ".srodata", ".data", ".sdata", ".bss", ".sbss", ".tbss", ".tdata")
META_SECTIONS = (
    ".rela",
    ".comment",
    ".note",
    ".riscv.attributes",
    ".llvm_addrsig",
    ".eh_frame",
    ".debug",
    ".symtab",
    ".strtab",
    ".shstrtab",
    ".group",
)
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
#: A section in `objdump -h`: "  3 .text.x  0000002c  0000000000000000 ..." (its flags on the next line).
_SECTION_HEADER = re.compile(r"^\s+\d+ (\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s")
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
    runner: Path  # the candidate's correctness program (no libc, no checks)
    baremetal: Path
    verifier: Path  # the trusted harness + baseline program that judges every output
    reference_runner: Path  # the runner linked with the baseline: the system calls a runner makes
    board: Path | None = None  # board mode: the glibc harness with its own checks and timing


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


def _harness_flags(spec: ProblemSpec, mode: str) -> list[str]:
    """Flags of one of the harness's builds: "baremetal", "runner" or "verify" (see rvv_harness.h)."""
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
    if mode == "baremetal":
        return [
            "--target=riscv64-unknown-elf",
            "-mcmodel=medany",
            "-ffreestanding",
            "-fno-pic",
            "-DRVV_BAREMETAL",
            *common,
        ]
    if mode == "runner":
        return [
            "--target=riscv64-linux-gnu",
            "-ffreestanding",
            "-fno-pic",
            "-fno-stack-protector",
            "-DRVV_RUNNER",
            *common,
        ]
    return ["--target=riscv64-linux-gnu", "-DRVV_VERIFY", *common]


#: Linking the runner: static, and nothing of a libc (its system calls are the harness's own).
RUNNER_LINK = ["--target=riscv64-linux-gnu", "-nostdlib", "-static", "-fuse-ld=lld"]


#: What a problem's folder in the harness cache holds once its trusted builds are done.
HARNESS_FILES = (
    "harness_runner.o",
    "harness_verify.o",
    "harness_bm.o",
    "crt.o",
    VERIFIER,
    REFERENCE_RUNNER,
)


def _harness_commands(spec: ProblemSpec, clang: str) -> list[tuple[list[str], str]]:
    """A problem's trusted builds, in order, each run in its cache folder: (argv, what). The
    harness in its three builds, the bare-metal start-up code, and the baseline linked into the
    verifier and the reference runner."""
    harness = [
        (
            [clang, *_harness_flags(spec, mode), "-c", str(spec.harness), "-o", obj],
            f"harness build ({what})",
        )
        for mode, obj, what in (
            ("runner", "harness_runner.o", "runner"),
            ("verify", "harness_verify.o", "verify"),
            ("baremetal", "harness_bm.o", "bare metal"),
        )
    ]
    crt = [
        clang,
        "--target=riscv64-unknown-elf",
        *ARCH_FLAGS,
        "-mcmodel=medany",
        "-c",
        str(RUNTIME_DIR / "crt.S"),
        "-o",
        "crt.o",
    ]
    baseline = [
        clang,
        *kernel_flags(spec, False),
        "-c",
        str(spec.folder / "baseline.c"),
        "-o",
        "baseline.o",
    ]
    return [
        *harness,
        (crt, "crt build"),
        (baseline, "baseline build"),
        (_glibc_link(clang, "baseline.o", VERIFIER), "verifier link"),
        (_runner_link(clang, "baseline.o", REFERENCE_RUNNER), "reference runner link"),
    ]


def _runner_link(clang: str, kernel: str, out: str) -> list[str]:
    """A runner: the harness's RVV_RUNNER build with a kernel object."""
    return [clang, *RUNNER_LINK, "harness_runner.o", kernel, "-o", out]


def _glibc_link(clang: str, kernel: str, out: str) -> list[str]:
    """The harness's glibc build (RVV_VERIFY) with a kernel object: the verifier (with the
    baseline) or the board program (with the candidate)."""
    return [
        clang,
        "--target=riscv64-linux-gnu",
        "-static",
        "-fuse-ld=lld",
        "harness_verify.o",
        kernel,
        "-lm",
        "-o",
        out,
    ]


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


def check_section(name: str, flags: set[str]) -> None:
    """Refuse a section that could run code outside the kernel's calls or hide code from the
    disassembly: init/fini arrays, code outside `.text`, a `.text` section that is not code
    (the linker would merge it into executable text), code that is also writable."""
    if name.startswith(FORBIDDEN_SECTIONS):
        raise BuildFailure(
            FailureKind.REJECTED,
            f"the kernel has a `{name}` section: code that runs outside the kernel's calls "
            "is not allowed",
        )
    code = "CODE" in flags
    is_text = name == ".text" or name.startswith(".text.")
    if is_text and not code:
        why = "data in a `.text` section: the linker would make it executable"
    elif code and not is_text:
        why = "code outside `.text`"
    elif code and "READONLY" not in flags:
        why = "writable code"
    elif not code and not name.startswith((*DATA_SECTIONS, *META_SECTIONS)):
        why = "a section of its own (keep data in the compiler's sections)"
    else:
        return
    raise BuildFailure(FailureKind.REJECTED, f"the kernel's section `{name}` is not allowed: {why}")


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
        async with lock:
            if not all((folder / n).is_file() for n in HARNESS_FILES):
                folder.mkdir(parents=True, exist_ok=True)
                folder.chmod(0o777)  # the sandbox may run the compiler as another uid
                try:
                    for argv, what in _harness_commands(spec, self.tools.clang):
                        await self._run(argv, folder, what)
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
        board: bool = False,
    ) -> Built:
        """The programs of a candidate; ``seed`` draws the inputs of the bare-metal (timed) run,
        ``board`` adds the board program."""
        screen_source(code)
        cached = await self._harness_objects(spec)
        for name in ("harness_runner.o", "harness_bm.o", "crt.o"):
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
            _runner_link(self.tools.clang, "kernel.o", "prog_check"), workdir, "linking (Linux)"
        )
        if board:
            (workdir / "harness_verify.o").write_bytes((cached / "harness_verify.o").read_bytes())
            await self._run(
                _glibc_link(self.tools.clang, "kernel.o", "prog_board"), workdir, "linking (board)"
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
            runner=workdir / "prog_check",
            baremetal=workdir / "prog.elf",
            verifier=cached / VERIFIER,
            reference_runner=cached / REFERENCE_RUNNER,
            board=workdir / "prog_board" if board else None,
        )

    async def _check_machine_code(self, workdir: Path) -> None:
        """Refuse the instructions and sections a kernel needs to talk to the system or run
        outside its calls, whatever macros spelled them: every section is one of the expected
        kinds with the expected flags, and every executable one is disassembled."""
        listing = await self._run(
            [self.tools.objdump, "-h", "-d", "kernel.o"], workdir, "disassembling"
        )
        lines = listing.splitlines()
        for i, line in enumerate(lines):
            header = _SECTION_HEADER.match(line)
            if header:
                flags = lines[i + 1] if i + 1 < len(lines) else ""
                check_section(header.group(1), {f.strip() for f in flags.split(",")})
            fields = line.split("\t")
            if len(fields) < 3 or not fields[0].strip().endswith(":"):
                continue
            op, args = fields[2].strip(), fields[3].strip() if len(fields) > 3 else ""
            if op.startswith(
                "."
            ):  # .word, .short, .insn: bytes in the code that are not instructions
                raise BuildFailure(
                    FailureKind.REJECTED,
                    f"the kernel's code holds data (`{(op + ' ' + args).strip()}`): "
                    "code must be compiled from C, not stored as numbers",
                )
            if _SYSTEM_OP.match(op) or (
                _CSR_OP.match(op) and _csr_of(op, args) not in ALLOWED_CSRS
            ):
                raise BuildFailure(
                    FailureKind.REJECTED,
                    f"the compiled kernel contains `{(op + ' ' + args).strip()}`"
                    + ": a kernel may not make system calls or touch counters and CSRs",
                )

    async def _check_symbols(self, spec: ProblemSpec, workdir: Path) -> None:
        """The kernel is the object's only global definition (a second one could replace a
        function or variable of the harness or a libc), and it needs nothing but memcpy & co."""
        listing = await self._run([self.tools.nm, "kernel.o"], workdir, "listing symbols")
        functions, global_defs, undefined = set(), set(), set()
        for line in listing.splitlines():
            parts = line.split()
            kind, name = (parts[-2], parts[-1]) if len(parts) in (2, 3) else ("", "")
            if kind in ("U", "w", "v"):  # undefined, or weak and undefined
                undefined.add(name)
                continue
            if kind in ("T", "t", "W"):
                functions.add(name)
            if kind.isupper() or kind in ("i", "u"):  # global, weak, common, ifunc, unique
                global_defs.add(name)
        if spec.function not in functions:
            raise BuildFailure(
                FailureKind.COMPILE_ERROR,
                f"the candidate does not define the function `{spec.function}` (see kernel.h)",
            )
        others = sorted(global_defs - {spec.function})
        if others:
            names = ", ".join(f"`{o}`" for o in others)
            raise BuildFailure(
                FailureKind.REJECTED,
                f"the kernel defines {names} as well as `{spec.function}`: a kernel may define "
                "only its function; make helpers and tables `static`",
            )
        missing = sorted(undefined - ALLOWED_UNDEFINED)
        if missing:
            names = ", ".join(f"`{m}`" for m in missing)
            raise BuildFailure(
                FailureKind.COMPILE_ERROR,
                f"the kernel calls {names}, which is not available: kernels run without libc "
                "or libm (bare metal); write the code inline (e.g. a polynomial exp)",
            )
