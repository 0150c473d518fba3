"""Evaluating one candidate: check the source, build it with its harness, run it, judge it.

Every evaluation gets its own private temp dir (never a shared build dir). The compiler
and the simulator run through the core's sandbox (hard wall clock, memory and process
limits, no network). Inputs come from a seed drawn for each program, which the candidate's
own compile never sees. Correctness is judged here, in numpy, against the gold result of
the seeded inputs. In model mode the measured cycles and the outputs come from the model's
own record of the region the harness brackets, not from anything the program prints; in
external mode only report lines carrying the run's secret nonce are believed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import struct
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from autocomp_core import (
    EvalResult,
    FailureKind,
    SandboxLimits,
    SandboxResult,
    private_workdir,
    run_sandboxed,
)

from . import exposure, feedback, model_limits, toolchain, trusted
from .catalog import Spec, gold
from .config import GemminiConfig
from .elf import symbols, undefined_symbols, write_symbol
from .model import native
from .model.base import ArrayConfig
from .model.timing import TimingParams

# Headers the candidate may name (already included, or harmless): the line is dropped.
ALLOWED_INCLUDES = re.compile(
    r'^\s*#\s*include\s*[<"](\S*/)?(gemmini|gemmini_params|stdint|stddef|stdbool|'
    r'stdio|stdlib|string|runtime)\.h[>"]\s*$'
)
FORBIDDEN = [
    (
        re.compile(r"\b(asm|__asm__|__asm)\b"),
        "inline assembly is not allowed: use the gemmini.h macros",
    ),
    (
        re.compile(r"\bROCC_INSTRUCTION\w*"),
        "raw RoCC instructions are not allowed: use the gemmini.h macros",
    ),
    (re.compile(r"\bharness_\w+"), "the harness's internals are off limits"),
    (
        re.compile(r"\b(tohost|fromhost|rt_exit|rt_halt|rt_trap|exit)\s*\("),
        "ending the program is not allowed",
    ),
    (
        # any spelling of a directive that reads a file: %: is the digraph of #
        re.compile(
            r"^[ \t\f\v]*(#|%:)[ \t\f\v]*(include|include_next|import|embed)\b.*$", re.MULTILINE
        ),
        "#include, #embed and #import lines are not allowed (gemmini.h is already included)",
    ),
    (re.compile(r"\bmain\s*\("), "the candidate must not define main(); write solution() only"),
]
COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
#: What a candidate's object may use without defining: the runtime's libc subset (gemmini.h
#: itself is header-only). The harness, the HTIF mailbox and the exit path are out of reach.
ALLOWED_UNDEFINED = {"printf", "puts", "memset", "memcpy", "abs"}
CHECKS_SOURCE = (
    "source: no #include, inline assembly, raw RoCC, main() or harness names; the object "
    "uses only gemmini.h and printf/puts/memset/memcpy/abs"
)
SENTINEL = 0x5A
#: harness.h: HARNESS_PARAMS_PLACEHOLDER, the initial harness_params the evaluator overwrites
PARAMS_PLACEHOLDER = struct.pack("<QII", 0x736D61726170, 0x746F6E6E, 0x6C6C6966)
GUARD_BYTES, GUARD_VALUE = 4096, 0xA5  # harness.h: HARNESS_GUARD_BYTES / HARNESS_GUARD_VALUE
SPIKE_MEMORY_MB = (
    256  # Spike's -m<MB>: main memory at 0x80000000 (where link.ld places the program)
)
SPIKE_MEMORY = (0x80000000, SPIKE_MEMORY_MB << 20)


@dataclass
class BuildOutcome:
    ok: bool
    elf: Path | None
    failure: FailureKind | None = None
    message: str = ""
    seconds: float = 0.0


def check_source(code: str) -> tuple[str, str | None]:
    """(normalized code, reason to reject or None). Allowed #include lines become blank
    lines so compiler line numbers still match the candidate."""
    lines = [("" if ALLOWED_INCLUDES.match(line) else line) for line in code.splitlines()]
    code = "\n".join(lines) + "\n"
    # A courtesy screen (the compiler sees only its headers: exposure.py): lines joined by a
    # backslash-newline first, as the preprocessor joins them before it reads a directive.
    bare = COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), code.replace("\\\n", ""))
    for pattern, reason in FORBIDDEN:
        match = pattern.search(bare)
        if match:
            line = bare[: match.start()].count("\n") + 1
            return code, f"line {line}: {reason} (found {match.group(0).strip()!r})"
    if not re.search(r"\bsolution\s*\(", bare):
        return code, "no solution() function found: the candidate must define void solution(...)"
    return code, None


def _rejected(reason: str, duration_s: float = 0.0) -> EvalResult:
    """The result for a source check_source refused."""
    return EvalResult(
        correct=False,
        failure=FailureKind.REJECTED,
        feedback=f"Rejected: {reason}",
        duration_s=duration_s,
    )


def prelude(spec: Spec, model: bool) -> str:
    defines = "".join(f"#define {k} {v}\n" for k, v in spec.defines().items())
    flag = "#define GEMMINI_MODEL 1\n" if model else ""
    return f'{flag}{defines}#include "gemmini.h"\n#include "runtime.h"\n#line 1 "solution.c"\n'


def _limits(timeout_s: float, memory_mb: int) -> SandboxLimits:
    return SandboxLimits(wall_s=timeout_s, memory_mb=memory_mb, max_processes=64)


async def build(
    work: Path,
    spec: Spec,
    code: str,
    hw: GemminiConfig,
    seed: int,
    model: bool,
    timeout_s: float,
    nonce: int = 0,
) -> BuildOutcome:
    """Compile the candidate alone (its errors are the candidate's; it sees neither the seed nor
    the nonce), link it with the trusted objects (compiled once, `trusted`), then write the seed
    and the nonce into the program."""
    start = time.perf_counter()
    (work / "gemmini_params.h").write_text(hw.params_header())
    (work / "solution.c").write_text(prelude(spec, model) + code)
    cc = toolchain.clang()
    if cc is None:
        return BuildOutcome(
            False, None, FailureKind.INFRA_ERROR, "clang-19 not found (see `autocomp-core doctor`)"
        )
    limits = _limits(timeout_s, 2048)
    # each step: None, or the failure that ends the build
    failed = (
        await _compile_candidate(cc, work, limits)
        or await _link_program(cc, spec, hw, model, work, limits)
        or _write_params(work, seed, nonce)
    )
    if failed:
        return BuildOutcome(False, None, *failed, time.perf_counter() - start)
    return BuildOutcome(True, work / "prog.elf", seconds=time.perf_counter() - start)


async def _compile_candidate(
    cc: str, work: Path, limits: SandboxLimits
) -> tuple[FailureKind, str] | None:
    """solution.c alone into solution.o, which may name only what a candidate may use and
    define none of the names the evaluator finds the harness's symbols by."""
    # the compiler sees its copies of the headers, the toolchain and little else (exposure.py)
    compile_cand = await run_sandboxed(
        [
            cc,
            *toolchain.CFLAGS,
            *exposure.copy_headers(work),
            "-c",
            "solution.c",
            "-o",
            "solution.o",
        ],
        cwd=work,
        limits=limits,
        hidden=exposure.hidden_dirs([work, toolchain.install_root(cc)]),
    )
    if not compile_cand.ok:
        text = compile_cand.stderr or compile_cand.stdout
        kind = FailureKind.TIMEOUT if compile_cand.timed_out else FailureKind.COMPILE_ERROR
        return kind, _compiler_errors(text)
    reaching = sorted(undefined_symbols(work / "solution.o") - ALLOWED_UNDEFINED)
    if reaching:
        return (
            FailureKind.REJECTED,
            f"Rejected: solution() refers to {', '.join(reaching)}: a candidate may use gemmini.h "
            f"and {', '.join(sorted(ALLOWED_UNDEFINED))} only",
        )
    reserved = _reserved_names(work / "solution.o")
    if reserved:
        return (
            FailureKind.REJECTED,
            f"Rejected: solution.c defines {', '.join(reserved)}: names the harness uses to find "
            "its own symbols in the program are off limits",
        )
    return None


async def _link_program(
    cc: str, spec: Spec, hw: GemminiConfig, model: bool, work: Path, limits: SandboxLimits
) -> tuple[FailureKind, str] | None:
    """solution.o linked with the trusted objects into prog.elf."""
    trusted_objects = await trusted.objects(cc, spec, hw, model, work, limits)
    if isinstance(trusted_objects, str):
        return FailureKind.INFRA_ERROR, trusted_objects
    link = await _link(cc, trusted_objects, ["solution.o"], work, limits)
    if link.ok:
        return None
    text = link.stderr or link.stdout
    # The candidate's failure unless the trusted objects alone fail to link too (with
    # solution standing for main, in reach of the harness's call): only then is it ours.
    if link.timed_out:
        kind = FailureKind.TIMEOUT
    else:
        alone = await _link(cc, trusted_objects, ["-Wl,--defsym=solution=main"], work, limits)
        kind = FailureKind.COMPILE_ERROR if alone.ok else FailureKind.INFRA_ERROR
    return kind, "link failed:\n" + _compiler_errors(text)


def _write_params(work: Path, seed: int, nonce: int) -> tuple[FailureKind, str] | None:
    """The seed and the nonce, written into the linked program's harness_params."""
    params = struct.pack("<QII", nonce, seed & 0xFFFFFFFF, 0)
    try:
        write_symbol(work / "prog.elf", "harness_params", PARAMS_PLACEHOLDER, params)
    except ValueError as exc:  # the trusted objects alone define it once (see _reserved_names)
        return (
            FailureKind.REJECTED,
            f"Rejected: the harness's parameters could not be written into the program ({exc})",
        )
    return None


async def _link(cc: str, objects: list[Path], extra: list[str], work: Path, limits):
    return await run_sandboxed(
        [
            cc,
            *toolchain.CFLAGS,
            "-T",
            str(toolchain.RUNTIME_DIR / "link.ld"),
            *map(str, objects),
            *extra,
            "-o",
            "prog.elf",
        ],
        cwd=work,
        limits=limits,
    )


#: Symbols the evaluator looks up by name in the linked program (elf.symbols keeps one per name).
LOOKED_UP = {"__user_rodata_start", "__user_end"}


def _reserved_names(obj: Path) -> list[str]:
    """The names the candidate's object defines (local ones too, which no link would refuse)
    among those the evaluator finds the harness's symbols by."""
    defined = set(symbols(obj)) - undefined_symbols(obj)
    return sorted(n for n in defined if n.startswith("harness_") or n in LOOKED_UP)


def _compiler_errors(text: str, limit: int = 6000) -> str:
    """Keep the candidate's diagnostics (solution.c:LINE:COL), most useful first."""
    lines = text.splitlines()
    keep = [ln for ln in lines if "error" in ln or "solution.c" in ln or ln.startswith(" ")]
    out = "\n".join(keep or lines)
    return out[:limit]


async def compiled_model() -> Path | None:
    """The compiled model's library (built once, off the event loop), or None for the Python model:
    where it cannot be built, or where AUTOCOMP_GEMMINI_MODEL=python asks for the Python model."""
    if os.environ.get("AUTOCOMP_GEMMINI_MODEL", "compiled") == "python":
        return None
    return await asyncio.to_thread(native.built)


def _gold_bytes(spec: Spec, seed: int, is_float: bool) -> bytes:
    """The expected outputs, cached by what they depend on: the family and parameters (a
    problem built outside the catalog, such as the fidelity reader's, has no catalog id)."""
    return _gold_of(spec.family, json.dumps(spec.params, sort_keys=True), seed, is_float)


@lru_cache(maxsize=64)
def _gold_of(family: str, params: str, seed: int, is_float: bool) -> bytes:
    spec = Spec(id="", family=family, description="", params=json.loads(params), requires={})
    return np.ascontiguousarray(gold(spec, seed, is_float)).tobytes()


async def evaluate_model(
    spec: Spec,
    code: str,
    hw: GemminiConfig,
    seed: int,
    timeout_s: float,
    memory_mb: int,
    want_feedback: bool,
    timing_toml: str | None = None,
) -> EvalResult:
    t0 = time.perf_counter()
    code, reason = check_source(code)
    if reason:
        return _rejected(reason, time.perf_counter() - t0)
    with private_workdir("autocomp-gemmini-") as work:
        os.chmod(work, 0o755)
        built = await build(work, spec, code, hw, seed, True, timeout_s)
        if not built.ok:
            return EvalResult(
                correct=False,
                failure=built.failure,
                feedback=built.message,
                stderr=built.message,
                duration_s=time.perf_counter() - t0,
                extra={"build_s": built.seconds},
            )
        want = _gold_bytes(spec, seed, hw.dtype == "fp32")
        await _write_spec(work, hw, len(want) + 2 * GUARD_BYTES, timing_toml)
        run, sim_s = await _simulate(work, timeout_s, memory_mb)
        timings = {"build_s": built.seconds, "sim_s": sim_s}
        results_path = work / "results.json"
        results = json.loads(results_path.read_text()) if results_path.exists() else None
        common = {
            "stdout": run.stdout,
            "stderr": run.stderr,
            "duration_s": time.perf_counter() - t0,
        }
        if results is None or results.get("status") not in ("ok",):
            return _failed_run(run, results, timings, common)
        if not run.ok:
            return EvalResult(
                correct=False,
                failure=FailureKind.CRASH,
                extra=timings,
                feedback=f"the program exited with status {run.returncode} after the measured "
                f"region\n{run.stdout[-2000:]}",
                **common,
            )
        dumped = (work / "outputs.bin").read_bytes()
        extra = {**timings, **feedback.metrics(results, spec, hw)}
        return _judged(spec, hw, results, dumped, want, extra, common, want_feedback, timing_toml)


async def _write_spec(
    work: Path, hw: GemminiConfig, output_bytes: int, timing_toml: str | None
) -> None:
    """spec.json, what the Spike extension (spike_ext.py) reads: the hardware, where the
    measured region begins and ends, the output bytes to dump, the memory the candidate's DMA
    may reach, where to write its results, and the compiled model's library (if any)."""
    syms = symbols(work / "prog.elf")
    spec_file = {
        "hardware": hw.model_dump(),
        "array": asdict(ArrayConfig.of(hw)),
        "results": str(work / "results.json"),
        "outputs": str(work / "outputs.bin"),
        "roi_functions": {
            "begin": list(syms["harness_roi_begin"]),
            "end": list(syms["harness_roi_end"]),
        },
    }
    spec_file["output_bytes"] = output_bytes
    if timing_toml:
        spec_file["timing_toml"] = timing_toml
    spec_file["memory"] = list(SPIKE_MEMORY)
    # what the candidate's DMA may reach: the user side's read-only data and data (link.ld)
    user_lo, user_hi = syms["__user_rodata_start"][0], syms["__user_end"][0]
    spec_file["dma_window"] = [user_lo, user_hi - user_lo]
    library = await compiled_model()
    if library is not None:  # copied: the sandbox shows Spike the work dir, not our cache
        shutil.copyfile(library, work / library.name)
        os.chmod(work / library.name, 0o755)
        spec_file["native"] = str(work / library.name)
    (work / "spec.json").write_text(json.dumps(spec_file))


async def _simulate(work: Path, timeout_s: float, memory_mb: int) -> tuple[SandboxResult, float]:
    """prog.elf on Spike with our Gemmini extension, in the sandbox; and the run's seconds."""
    machine = ("--isa=rv64gc_zicntr", f"-m{SPIKE_MEMORY_MB}")
    spike, spike_env = toolchain.spike_direct(toolchain.extension_path(), machine, work)
    env = {
        **toolchain.spike_env(),
        **spike_env,
        "AUTOCOMP_GEMMINI_SPEC": str(work / "spec.json"),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    argv = [*spike, "--extension=gemmini", "prog.elf"]
    t_sim = time.perf_counter()
    run = await run_sandboxed(argv, cwd=work, env=env, limits=_limits(timeout_s, memory_mb))
    return run, time.perf_counter() - t_sim


def _judged(
    spec: Spec,
    hw: GemminiConfig,
    results: dict,
    dumped: bytes,
    want: bytes,
    extra: dict,
    common: dict,
    want_feedback: bool,
    timing_toml: str | None,
) -> EvalResult:
    """The verdict on a run that completed: the guard bytes, then the outputs against the gold
    result; for a correct one the cycles, and the feedback with the model limits that apply."""
    got, guards = dumped[: len(want)], dumped[len(want) :]
    verdict = guard_verdict(guards) or compare(spec, got, want, hw.dtype == "fp32")
    if verdict:
        return EvalResult(
            correct=False,
            failure=FailureKind.WRONG_ANSWER,
            feedback=verdict,
            extra=extra,
            **common,
        )
    # what the model does not model, where it matters for this program (model_limits.py)
    limits = model_limits.applying(results, TimingParams.from_toml(timing_toml))
    text = ""
    if want_feedback:
        text = "\n".join(
            part
            for part in (feedback.describe(results, spec, hw), model_limits.section(limits))
            if part
        )
    return EvalResult(
        correct=True,
        metric=float(results["cycles"]),
        unit="cycles",
        feedback=text,
        extra=extra,
        verification={"model_limits": limits},
        **common,
    )


def _failed_run(run, results: dict | None, timings: dict, common: dict) -> EvalResult:
    if results is not None and results.get("status") == "model_error":
        message = results["error"]
        last = results.get("last_command", "")
        text = f"Gemmini rejected a command: {message}" + (
            f"\n(last command: {last})" if last else ""
        )
        wrong = "missing gemmini_fence" in message or "outside its arrays" in message
        kind = FailureKind.WRONG_ANSWER if wrong else FailureKind.CRASH
        if "may not call the harness" in message or "not issued through the gemmini.h" in message:
            kind = FailureKind.REJECTED
        return EvalResult(correct=False, failure=kind, feedback=text, extra=timings, **common)
    if results is not None and results.get("status") == "internal_error":
        return EvalResult(
            correct=False,
            failure=FailureKind.INFRA_ERROR,
            feedback="the Gemmini model failed (not the candidate's fault)",
            extra=timings,
            **{**common, "stderr": results.get("error", "")},
        )
    if run.timed_out:
        return EvalResult(
            correct=False,
            failure=FailureKind.TIMEOUT,
            extra=timings,
            feedback=f"the simulation did not finish within {run.wall_s:.0f} s "
            "(an endless loop, or far too much work)",
            **common,
        )
    trap = re.search(r"trap: mcause=(\d+) mepc=(0x[0-9a-f]+) mtval=(0x[0-9a-f]+)", run.stdout)
    if trap:
        cause = {
            "1": "instruction access fault",
            "2": "illegal instruction",
            "5": "load access fault",
            "7": "store access fault",
            "8": "ecall",
            "4": "misaligned load",
            "6": "misaligned store",
        }.get(trap.group(1), f"mcause {trap.group(1)}")
        return EvalResult(
            correct=False,
            failure=FailureKind.CRASH,
            extra=timings,
            feedback=f"the program crashed: {cause} at pc {trap.group(2)} "
            f"(address {trap.group(3)}): solution() runs in user mode and may touch only its own "
            "code and data, its stack and the buffers it is given (an out-of-bounds pointer?)",
            **common,
        )
    return EvalResult(
        correct=False,
        failure=FailureKind.CRASH,
        extra=timings,
        feedback=f"the program ended (status {run.returncode}) without reaching the end of "
        f"the measured region\n{(run.stderr or run.stdout)[-1500:]}",
        **common,
    )


def guard_verdict(guards: bytes) -> str | None:
    """The guard bytes before and after the output must be untouched."""
    pre, post = guards[:GUARD_BYTES], guards[GUARD_BYTES:]
    for where, blob in (("before", pre), ("after", post)):
        changed = [i for i, b in enumerate(blob) if b != GUARD_VALUE]
        if changed:
            span = GUARD_BYTES - changed[0] if where == "before" else changed[-1] + 1
            return (
                f"Wrong answer: solution() wrote outside the output array, up to {span} bytes {where} it "
                "(check the loop bounds and tile sizes)."
            )
    return None


def compare(spec: Spec, got: bytes, want: bytes, is_float: bool) -> str | None:
    """None when equal, else a short description of the first differences."""
    if len(got) != len(want):
        return f"output has {len(got)} bytes, expected {len(want)}"
    if is_float:
        g, w = np.frombuffer(got, np.float32), np.frombuffer(want, np.float32)
        # NaN is never a wildcard: it matches only a NaN at the same place in the gold result
        bad = ~((np.abs(g - w) <= 1e-4 * (1.0 + np.abs(w))) | (np.isnan(g) & np.isnan(w)))
    else:
        g, w = np.frombuffer(got, np.int8), np.frombuffer(want, np.int8)
        bad = g != w
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    idx = np.flatnonzero(bad)
    shape = gold_shape(spec)
    where = [np.unravel_index(int(i), shape) if shape else (int(i),) for i in idx[:3]]
    details = ", ".join(
        f"{tuple(int(x) for x in pos)}: got {g[i]} expected {w[i]}"
        for pos, i in zip(where, idx[:3])
    )
    text = f"Wrong answer: {n_bad} of {g.size} output elements differ; first at {details}."
    if not is_float and np.all(g[idx] == SENTINEL):
        text += " Those elements were never written (they still hold the harness's fill value)."
    elif not is_float:
        gi, wi = np.abs(g[idx].astype(np.int64)), np.abs(w[idx].astype(np.int64))
        saturated = np.mean(gi >= 127) > 0.5 and np.mean(wi >= 127) < 0.1
        ratio = (np.median(gi) + 1) / (np.median(wi) + 1)
        if saturated or ratio > 2 or ratio < 0.5:
            text += " The magnitudes are off: check the scale factor and the accumulate bit."
    return text


def gold_shape(spec: Spec) -> tuple[int, ...]:
    p = spec.params
    if spec.family == "gemm":
        return (p["gemm_m"], p["gemm_n"])
    if spec.family == "conv":
        return (p["conv_batch"], p["conv_out_dim"], p["conv_out_dim"], p["conv_out_ch"])
    return ()


CHECKS = {
    "model": [
        CHECKS_SOURCE,
        "model: solution() runs in user mode behind PMP (code not writable, data not executable, "
        "the harness, the HTIF mailbox and the counters' machine CSRs out of reach); Gemmini's "
        "DMA is held to the same user data",
        "model: instructions counted from Spike's own counter, at commands issued through the "
        "gemmini.h macros only",
        "model: the measured region is begun once, by the harness's own functions in machine "
        "mode, and the simulation ends with it",
        "model: the outputs the simulator dumps when solution() returns equal the numpy gold result "
        "(int8 bit for bit, fp32 within 1e-4 relative; NaN never matches)",
        "model: the 4096 guard bytes before and after the outputs are untouched",
    ],
    "external": [
        CHECKS_SOURCE,
        "external: only report lines carrying this run's secret nonce are read; output imitating "
        "them is refused",
        "external: the reported hash of every output buffer, guards included, equals that of the numpy "
        "gold result (fp32 outputs: every value, within 1e-4 relative)",
    ],
}


def verification(spec: Spec, seed: int, mode: str) -> dict:
    """What an evaluation rests on: one seed (the timed run is the checked run), the problem's
    fixed shape (the candidate may specialize to it: that shape is what is measured)."""
    return {
        "seeds": {"timed": seed},
        "shapes": {"timed": spec.shape()},
        "checks": list(CHECKS[mode]),
    }


REPORT = "AUTOCOMP-"
#: What a forged cycle count looks like (the old external protocol printed `cycles: N`).
_FORGED_COUNT = re.compile(r"\bcycles\s*[:=]\s*\d", re.IGNORECASE)


def report_hash(blob: bytes, nonce: int) -> int:
    """The harness's keyed output hash (harness_common.c: report_hash), vectorized."""
    key = np.uint64(nonce | 1)
    words = np.frombuffer(blob + bytes(-len(blob) % 8), dtype="<u8")
    powers = np.full(len(words), key, dtype=np.uint64).cumprod()[::-1]  # key^n .. key^1
    with np.errstate(over="ignore"):
        return int((words * powers).sum(dtype=np.uint64) + np.uint64(len(blob)))


def read_report(stdout: str, nonce: int) -> tuple[list[str], str | None]:
    """The harness's report lines (without their prefix), or why the output is refused."""
    prefix = f"{REPORT}{nonce:016x} "
    lines = []
    for line in stdout.splitlines():
        if line.startswith(prefix):
            lines.append(line[len(prefix) :])
        elif REPORT in line or _FORGED_COUNT.search(line):
            return (
                lines,
                f"Rejected: the program printed a line imitating the harness's report: {line[:120]!r}",
            )
    return lines, None


def judge_report(
    spec: Spec, lines: list[str], want: bytes, is_float: bool, nonce: int
) -> tuple[float | None, str]:
    """(cycles, "") when the reported outputs equal the gold result, else (None, why not)."""
    cycles = [int(line.split()[1]) for line in lines if line.startswith("cycles ")]
    outputs = {
        int(f[1]): (int(f[2]), int(f[3], 16))
        for f in (line.split() for line in lines)
        if f[0] == "output" and len(f) == 4
    }
    if len(cycles) != 1 or sorted(outputs) != [0, 1, 2]:
        return None, "the harness's report is incomplete (the program ended early?)"
    guard = bytes([GUARD_VALUE]) * GUARD_BYTES
    if outputs[1] != outputs[2] or outputs[1] != (GUARD_BYTES, report_hash(guard, nonce)):
        return None, (
            "Wrong answer: solution() wrote outside the output array (the guard bytes around it "
            "changed; check the loop bounds and tile sizes)."
        )
    if is_float:
        data = bytearray()
        for line in lines:
            if line.startswith("data "):
                data += bytes.fromhex(line.split()[2])
        verdict = compare(spec, bytes(data), want, True)
    elif outputs[0] != (len(want), report_hash(want, nonce)):
        notes = [line[5:] for line in lines if line.startswith("note ")]
        verdict = (
            "Wrong answer: the outputs differ from the gold result"
            + (f" ({notes[0]})" if notes else "")
            + "."
        )
    else:
        verdict = None
    return (None, verdict) if verdict else (float(cycles[0]), "")


async def evaluate_external(
    spec: Spec,
    code: str,
    hw: GemminiConfig,
    seed: int,
    timeout_s: float,
    memory_mb: int,
    command: list[str],
) -> EvalResult:
    """Build without the model hooks and run `command` ({elf} = the program), e.g. a real
    Spike-with-Gemmini or a FireSim launcher. The harness reports the cycles (rdcycle) and a
    hash of every output buffer on lines tagged with a nonce drawn here; the verdict is ours."""
    t0 = time.perf_counter()
    code, reason = check_source(code)
    if reason:
        return _rejected(reason)
    nonce = secrets.randbits(64)
    with private_workdir("autocomp-gemmini-ext-") as work:
        os.chmod(work, 0o755)
        built = await build(work, spec, code, hw, seed, False, timeout_s, nonce)
        if not built.ok:
            return EvalResult(correct=False, failure=built.failure, feedback=built.message)
        argv = [part.replace("{elf}", str(built.elf)) for part in command]
        run = await run_sandboxed(
            argv,
            cwd=work,
            limits=_limits(timeout_s, memory_mb),
            env={
                "OPENBLAS_NUM_THREADS": "1",
                **toolchain.spike_env(),
                "AUTOCOMP_GEMMINI_HARDWARE": json.dumps(hw.model_dump()),
            },
        )
    common = {"stdout": run.stdout, "stderr": run.stderr, "duration_s": time.perf_counter() - t0}
    if run.timed_out:
        return EvalResult(
            correct=False, failure=FailureKind.TIMEOUT, feedback="external run timed out", **common
        )
    lines, forged = read_report(run.stdout, nonce)
    if forged:
        return EvalResult(
            correct=False,
            failure=FailureKind.REJECTED,
            status="forged_report",
            feedback=forged,
            **common,
        )
    is_float = hw.dtype == "fp32"
    cycles, verdict = judge_report(spec, lines, _gold_bytes(spec, seed, is_float), is_float, nonce)
    if cycles is not None:
        return EvalResult(correct=True, metric=cycles, unit="cycles", **common)
    if lines and "incomplete" not in verdict:
        return EvalResult(
            correct=False, failure=FailureKind.WRONG_ANSWER, feedback=verdict, **common
        )
    return EvalResult(
        correct=False,
        failure=FailureKind.CRASH,
        feedback=f"external run ended with status {run.returncode} without the harness's full "
        f"report\n{(run.stderr or run.stdout)[-1500:]}",
        **common,
    )
