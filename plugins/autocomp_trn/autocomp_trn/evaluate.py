"""Evaluating one candidate in emulator mode: screen -> trace (sandboxed, untrusted) -> replay
(sandboxed, trusted) -> verdict.

The tracing process runs the candidate and nothing else; the replay process runs only this
plugin's code on the trace (data), on inputs drawn from seeds the tracing process never sees.
Both get hard wall-clock and memory limits from ``autocomp_core.run_sandboxed``, and are forked
(unless ``preload`` is off) from a server that imported NumPy and the emulator once
(``autocomp_core.PreloadServer``): in the same sandbox, without paying those imports each time.

What the two steps share is nothing the candidate can write. Each step's request goes in on its
stdin. The tracing process runs in a fresh dir of its own; the engine reads its two results
(``status.json``, ``trace.json``) from there as bytes, opening neither through a link and only as
regular files, and writes nothing there once the kernel has run. The replay runs in another fresh
dir the tracing process never could write, gets the trace by value on its stdin, and prints its
verdict on its stdout. Every step's interpreter leaves its working dir off ``sys.path``
(``PYTHONSAFEPATH``), so no module planted there is imported in place of a standard one.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from autocomp_core import (
    FailureKind,
    PreloadServer,
    SandboxLimits,
    SandboxResult,
    child_import_path,
    evaluation_seeds,
    last_json_line,
    private_workdir,
    run_failure,
    run_sandboxed,
)

import autocomp_trn

from . import screen
from .emulator import MAX_EVENTS
from .emulator.hardware import GENERATIONS, Generation
from .problems.spec import ProblemSpec


@dataclass
class Verdict:
    status: str  # ok | compile_error | wrong_answer | rejected | timeout | crash | infra_error
    message: str = ""
    latency_us: float | None = None
    summary: str = ""
    line: int = 0
    code: str = ""
    details: dict = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Settings:
    generation: str = "trn1"
    seeds: int = 3
    trace_timeout_s: float = 60.0
    replay_timeout_s: float = 120.0
    memory_mb: int = 6144
    max_events: int = MAX_EVENTS
    preload: bool = True  # trace and replay forked from a server that did their imports


#: the sandboxed steps of an evaluation (``python -m STEP request.json``)
STEPS = {step: f"autocomp_trn.runtime.{step}_main" for step in ("trace", "replay")}


def seeds_for(base_seed: int, problem_id: str, code: str, count: int) -> list[int]:
    """Deterministic per (run seed, problem, program), unknown to the kernel (it never sees them)."""
    return evaluation_seeds(base_seed, problem_id, code, count)


#: What an emulator-mode verdict rests on, for ``EvalResult.verification``.
CHECKS = [
    "screen: the kernel's source (imports, names, constructs)",
    "trace: the kernel called twice in a sandbox on opaque handles, identical traces required",
    "replay: every hardware rule re-checked by the plugin's own code on the trace",
    "outputs: computed from the trace on each seed's inputs (the last seed scaled or edited where "
    "the problem declares it), exact shape and dtype required, compared with a float64 reference; "
    "any NaN or Inf, or a constant output where the reference varies, fails",
    "hints: a matmul's is_*_onezero hint is priced only if the operand holds only 0 and 1",
    "cost: the trace whose outputs were checked is the trace that is costed",
    "bound: a latency more than 1% below the speed-of-light bound is impossible_result",
]


def verification(spec: ProblemSpec, code: str, seed: int, count: int) -> dict:
    """The seeds, shapes and checks of one emulator-mode evaluation: the checked trace is the timed
    one, so both run at the same shape."""
    return {
        "seeds": {"checks": seeds_for(seed, spec.id, code, count)},
        "shapes": {"checks": spec.describe_shapes(), "timed": spec.describe_shapes()},
        "checks": list(CHECKS),
    }


def child_env() -> dict[str, str]:
    return {
        "PYTHONPATH": child_import_path(autocomp_trn),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        # ``python -m`` would put the working dir first on sys.path (python -P)
        "PYTHONSAFEPATH": "1",
    }


#: what a tracing process may report (``infra_error`` is the evaluator's own failure, retried for
#: free: a candidate's process never gets to claim it)
TRACE_STATUSES = ("ok", "compile_error", "rejected")
#: the most a step's result file may hold (the sandbox's own file-size limit)
RESULT_LIMIT_BYTES = 1024 << 20


class LeftBadly(Exception):
    """A result the candidate's process left in a form the engine will not read (a link, a
    FIFO, a device, a file over the limit)."""


def read_result(folder: Path, name: str) -> bytes | None:
    """The bytes of ``folder/name`` written by a step, None if there is none. The dir is ours,
    but what lies in it is the candidate's: a link is never followed (``O_NOFOLLOW``), a FIFO
    never waited on (``O_NONBLOCK``), and only a regular file is read."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LeftBadly(f"{name} is a symbolic link") from None
        raise LeftBadly(f"{name} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LeftBadly(f"{name} is not a regular file")
        if info.st_size > RESULT_LIMIT_BYTES:
            raise LeftBadly(f"{name} holds {info.st_size} bytes")
        return f.read(RESULT_LIMIT_BYTES + 1)


def _line(value: object) -> int:
    """A line number from an untrusted report (0 when it is none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _ended_badly(run: SandboxResult, what: str, limit: float) -> Verdict:
    """A step that failed, or that exited 0 without what it was to leave."""
    ended = run_failure(run, what, limit)
    if ended is None:
        tail = (run.stderr or run.stdout or "").strip()[-1500:]
        ended = FailureKind.CRASH, f"{what} exited with status 0" + (f":\n{tail}" if tail else "")
    return Verdict(ended[0].value, ended[1])


class EmulatorEvaluator:
    def __init__(self, settings: Settings) -> None:
        if settings.generation not in GENERATIONS:
            raise ValueError(f"unknown generation {settings.generation!r}")
        self.settings = settings

    def _limits(self, wall_s: float) -> SandboxLimits:
        return SandboxLimits(
            wall_s=wall_s, memory_mb=self.settings.memory_mb, file_size_mb=1024, max_processes=64
        )

    async def _run_child(
        self,
        step: str,
        request: dict,
        wall_s: float,
        phases: dict[str, float],
        cwd: Path | None,
        payload: bytes = b"",
    ) -> SandboxResult:
        """One step (``trace`` or ``replay``) in a sandboxed child, its request on its stdin (one
        JSON line, then ``payload``), in ``cwd`` (None: a fresh dir of the sandbox's own); its
        time recorded as ``phases["{step}_s"]``."""
        t = time.perf_counter()
        env = child_env()
        server = PreloadServer.shared(list(STEPS.values()), env) if self.settings.preload else None
        run = await run_sandboxed(
            [sys.executable, "-m", STEPS[step], "-"],
            limits=self._limits(wall_s),
            cwd=cwd,
            env=env,
            stdin=json.dumps(request).encode() + b"\n" + payload,
            preload=server,
        )
        phases[f"{step}_s"] = time.perf_counter() - t
        return run

    async def evaluate(
        self,
        spec: ProblemSpec,
        code: str,
        seed: int = 0,
        *,
        full: bool = False,
        numeric: bool = True,
        use_screen: bool = True,
        timeout_s: float | None = None,
    ) -> Verdict:
        """``timeout_s`` (the run's evaluation limit) caps each stage's own limit."""
        s, cap = self.settings, timeout_s or float("inf")
        verdict = await self._evaluate(
            spec,
            code,
            seed,
            full,
            numeric,
            use_screen,
            min(s.trace_timeout_s, cap),
            min(s.replay_timeout_s, cap),
        )
        lines = code.splitlines()
        if (
            verdict.line
            and 0 < verdict.line <= len(lines)
            and not verdict.message.startswith("refused before")
        ):
            verdict.message = (
                f"line {verdict.line}: {lines[verdict.line - 1].strip()}\n{verdict.message}"
            )
        return verdict

    async def _evaluate(
        self,
        spec: ProblemSpec,
        code: str,
        seed: int,
        full: bool,
        numeric: bool,
        use_screen: bool,
        trace_s: float,
        replay_s: float,
    ) -> Verdict:
        s = self.settings
        phases: dict[str, float] = {}
        seeds = seeds_for(seed, spec.id, code, s.seeds)
        if spec.language == "pytorch" and code.strip() == spec.baseline_code().strip():
            return await self._framework(spec, seeds, replay_s)
        t = time.perf_counter()
        if use_screen and (findings := screen.check(code)):
            return Verdict(
                "rejected",
                "refused before running:\n" + "\n".join(map(str, findings)),
                line=findings[0].line,
                code=findings[0].rule,
                phases_s={"screen_s": time.perf_counter() - t},
            )
        phases["screen_s"] = time.perf_counter() - t
        gen = GENERATIONS[s.generation]
        traced = await self._trace(spec, code, gen, full, trace_s, phases)
        if isinstance(traced, Verdict):
            return traced
        replay = {
            "problem": spec.id,
            "seeds": seeds,
            "generation": gen.name,
            "full": full,
            "numeric": numeric,
        }
        # a fresh dir the tracing process never could write, the trace carried by value (after
        # the request's line, as is: not escaped into it and parsed twice)
        run = await self._run_child("replay", replay, replay_s, phases, None, traced)
        return self._verdict(run, "replaying the trace", replay_s, phases)

    async def _trace(
        self,
        spec: ProblemSpec,
        code: str,
        gen: Generation,
        full: bool,
        trace_s: float,
        phases: dict[str, float],
    ) -> bytes | Verdict:
        """Trace the kernel in its sandboxed process: the trace it wrote, or the verdict on why
        there is none."""
        inputs, _ = spec.shapes(full)
        request = {
            "kernel": code,
            "entry": spec.entry,
            "generation": gen.name,
            "sbuf_bytes": gen.sbuf_bytes_per_partition,
            "max_events": self.settings.max_events,
            "inputs": [[i.name, list(i.shape), i.dtype] for i in inputs],
            "kwargs": spec.kwargs,
        }
        # the tracing process's own dir: the engine writes nothing in it, and reads from it only
        # the two results, once the process (and so the kernel) has ended
        with private_workdir("autocomp-trn-trace-") as work:
            work.chmod(0o755)
            run = await self._run_child("trace", request, trace_s, phases, work)
            try:
                status_bytes = None if run.timed_out else read_result(work, "status.json")
                status = json.loads(status_bytes) if status_bytes is not None else None
                ok = isinstance(status, dict) and status.get("status") == "ok"
                trace_bytes = read_result(work, "trace.json") if ok else None
            # (RecursionError: nesting deep enough to exhaust the parser's stack)
            except (LeftBadly, ValueError, RecursionError) as exc:
                return Verdict(
                    "rejected",
                    f"the kernel's process left its result in a form the evaluator does not read: "
                    f"{exc}",
                    code="err_result_tampered",
                    phases_s=phases,
                )
        if not isinstance(status, dict):
            v = _ended_badly(run, "tracing the kernel", trace_s)
            v.phases_s = phases
            return v
        if status.get("status") != "ok":
            kind = str(status.get("status"))
            return Verdict(
                kind if kind in TRACE_STATUSES else "rejected",
                str(status.get("message", "")),
                line=_line(status.get("line")),
                code=str(status.get("code", "")),
                phases_s=phases,
            )
        if trace_bytes is None:
            v = _ended_badly(run, "tracing the kernel (no trace written)", trace_s)
            v.status = "crash"
            v.phases_s = phases
            return v
        return trace_bytes

    def _verdict(self, run: SandboxResult, what: str, limit: float, phases: dict) -> Verdict:
        out = last_json_line(run.stdout) if not run.timed_out else None
        if out is None:
            v = _ended_badly(run, what, limit)
            if v.status == "timeout":
                v.message += " (the kernel's trace is too long or too slow to emulate)"
            v.phases_s = phases
            return v
        for key, secs in (out.get("timings") or {}).items():
            phases["replay." + key] = float(secs)
        # imported here: the judge's module loads the replay and its NumPy dtypes (ml_dtypes,
        # most of a second), which the engine's process and the CLI never need otherwise
        from .judge import refuse_below_bound

        out = refuse_below_bound(out)
        return Verdict(
            out["status"],
            out.get("message", ""),
            out.get("latency_us"),
            out.get("summary", ""),
            int(out.get("line") or 0),
            out.get("code", ""),
            out,
            phases,
        )

    async def _framework(self, spec: ProblemSpec, seeds: list[int], limit_s: float) -> Verdict:
        s = self.settings
        with private_workdir("autocomp-trn-fw-") as work:
            work.chmod(0o755)
            (work / "baseline.py").write_text(spec.baseline_code())
            (work / "request.json").write_text(
                json.dumps(
                    {
                        "problem": spec.id,
                        "source": str(work / "baseline.py"),
                        "seeds": seeds,
                        "generation": s.generation,
                    }
                )
            )
            t = time.perf_counter()
            run = await run_sandboxed(
                [
                    sys.executable,
                    "-m",
                    "autocomp_trn.runtime.framework_main",
                    str(work / "request.json"),
                ],
                limits=self._limits(limit_s),
                cwd=work,
                env={**child_env(), "OMP_NUM_THREADS": "2"},
            )
            return self._verdict(
                run,
                "running the PyTorch baseline",
                limit_s,
                {"framework_s": time.perf_counter() - t},
            )
