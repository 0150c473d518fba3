"""The ``toy`` backend: a real but tiny target for tests and benchmarks of the engine.

Programs are Python functions ``solution(xs)``. Each candidate runs in the sandbox under
``toy_harness.py``, which checks it against a reference and counts the Python lines and
calls it executes on a fixed workload: a deterministic metric (unit ``lines``) that real
optimizations lower. Load it with ``AUTOCOMP_PLUGINS=toy_plugin`` and this folder on the
Python path (``tests/conftest.py`` does both).

Besides the problems it lists, ``load_problem`` takes shape siblings of ``sum_squares``:
``sum_squares-<N>`` (1 <= N <= 4096) is the same operator measured on lists of length N,
with ``metadata`` family ``sum_squares`` and shapes ``[N]`` (the playbook's features). They
are not listed, so ``--all`` and the listing stay the four problems.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import anyio
from pydantic import Field

from autocomp_core import (
    Backend,
    BackendOptions,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    FailureKind,
    HardwareConfig,
    KnowledgePack,
    Problem,
    Resources,
    SandboxLimits,
    hookimpl,
    run_sandboxed,
)
from autocomp_core.fidelity import FidelityUnsupported, MeasuredProgram

HERE = Path(__file__).parent
HARNESS = (HERE / "toy_harness.py").read_text()

PROBLEMS = {
    "sum_squares": ("Return the sum of x * x over the list.", "an int"),
    "prefix_max": ("Return the running maximum: out[i] == max(xs[:i + 1]).", "a list of ints"),
    "count_pairs": ("Return the number of pairs i < j with xs[i] + xs[j] == 0.", "an int"),
    "count_negatives": ("Return how many values are negative.", "an int"),
}
#: the file listing a toy source's measured programs (``fidelity_programs``)
MEASURED_INDEX = "toy-measured.json"
#: a shape sibling's id: ``sum_squares`` at list length N (``toy_harness.shape_sibling``)
SIBLING = re.compile(r"sum_squares-([1-9][0-9]{0,3})")
#: the longest list a sibling's workload may use (the harness traces every line it runs)
SIBLING_MAX = 4096
#: Solution calls in the harness's fixed workload (``toy_harness.WORKLOAD_SIZES``).
WORKLOAD_RUNS = 3


class ToyHardware(HardwareConfig):
    line_cost: int = Field(1, ge=1, description="cost of one executed line of the program")
    call_cost: int = Field(3, ge=0, description="cost of one call into the program's functions")


class ToyOptions(BackendOptions):
    delay_s: float = Field(
        0.0,
        ge=0,
        description="sleep before each evaluation (a slow compiler or simulator, for benchmarks)",
    )
    claimed_lower_bound: float | None = Field(
        None,
        gt=0,
        description=(
            "a lower bound to claim instead of the true one (tests of the engine's refusal of "
            "results below the bound)"
        ),
    )
    declare_lower_bound: bool = Field(
        True, description="declare a lower bound at all (tests of options that need one)"
    )


class ToyBackend(Backend):
    name = "toy"
    description = "Python functions scored by executed lines (test backend)"
    file_extension = ".py"
    language = "python"
    metric_unit = "lines"
    hardware_config_type = ToyHardware
    options_type = ToyOptions
    capabilities = frozenset({Capability.HW_FEEDBACK})

    hardware: ToyHardware
    options: ToyOptions

    def problems(self) -> list[Problem]:
        found = []
        for problem_id, (task, returns) in PROBLEMS.items():
            path = HERE / "problems" / f"{problem_id}.py"
            found.append(
                Problem(
                    id=problem_id,
                    description=task,
                    baseline_code=path.read_text(),
                    baseline_path=path,
                    context=f"`solution(xs)` gets a list of up to 100 ints in [-50, 50] and "
                    f"returns {returns}.",
                )
            )
        return found

    def load_problem(self, ref: str) -> Problem:
        """A listed problem, or a shape sibling ``sum_squares-<N>``."""
        size = _sibling_size(ref)
        if size is None:
            return super().load_problem(ref)
        path = HERE / "problems" / "sum_squares.py"
        return Problem(
            id=ref,
            description=PROBLEMS["sum_squares"][0],
            baseline_code=path.read_text(),
            baseline_path=path,
            context=f"`solution(xs)` gets a list of ints in [-50, 50] and returns an int; the "
            f"score is measured on lists of length {size}.",
            metadata={"family": "sum_squares", "shapes": [size]},
        )

    def knowledge(self, problem: Problem) -> KnowledgePack:
        return KnowledgePack.from_dir(HERE / "knowledge")

    def metric_lower_bound(self, problem: Problem) -> float | None:
        if not self.options.declare_lower_bound:
            return None
        if self.options.claimed_lower_bound is not None:
            return self.options.claimed_lower_bound
        # Every workload call enters `solution` (one call) and runs at least one line of it.
        hw = self.hardware
        return float(WORKLOAD_RUNS * (hw.line_cost + hw.call_cost))

    def resources(self) -> Resources:
        return Resources(cpus=1, memory_mb=1024)

    def doctor(self) -> list[DoctorCheck]:
        try:
            version = subprocess.run(
                [sys.executable, "--version"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
            ok = bool(version)
        except (OSError, subprocess.TimeoutExpired) as exc:
            version, ok = str(exc), False
        return [
            DoctorCheck(
                "python", ok, detail=version or sys.executable, fix="apt-get install -y python3"
            )
        ]

    def fidelity_programs(self, source: Path) -> list[MeasuredProgram]:
        """Programs listed in ``MEASURED_INDEX`` of ``source``: a JSON list of ``{chain, step,
        name, measured, problem, file, held_out}`` (the fidelity command's test source)."""
        index = Path(source) / MEASURED_INDEX
        if not index.is_file():
            raise FidelityUnsupported(f"{source} is not a toy measurements folder: no {index}")
        problems = {p.id: p for p in self.problems()}
        return [
            MeasuredProgram(
                chain=entry["chain"],
                step=int(entry["step"]),
                name=entry["name"],
                measured=float(entry["measured"]),
                problem=problems[entry["problem"]],
                code=(Path(source) / entry["file"]).read_text(),
                held_out=bool(entry.get("held_out", False)),
                source=entry["file"],
            )
            for entry in json.loads(index.read_text())
        ]

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        if problem.id not in PROBLEMS and _sibling_size(problem.id) is None:
            raise KeyError(f"unknown toy problem {problem.id!r}")
        hw = self.hardware
        if self.options.delay_s > 0:
            await anyio.sleep(self.options.delay_s)
        nonce = secrets.token_hex(16)
        run = await run_sandboxed(
            [sys.executable, "-I", "-B", "toy_harness.py", problem.id, str(ctx.seed)],
            limits=SandboxLimits(wall_s=ctx.timeout_s, memory_mb=1024, max_output_bytes=64_000),
            stdin=f"{nonce}\n".encode(),
            files={"toy_harness.py": HARNESS, "candidate.py": code},
        )
        # the program's own output, without the harness's nonce-keyed report line
        stdout = "\n".join(
            line for line in run.stdout.splitlines() if not line.startswith(nonce + " ")
        )
        base = dict(
            unit=self.metric_unit,
            stdout=stdout,
            stderr=run.stderr,
            duration_s=run.wall_s,
            verification={
                "seeds": [ctx.seed],
                "checks": ["edge cases and three seeded random lists equal the reference"],
            },
        )
        if run.timed_out:
            return EvalResult(
                False,
                failure=FailureKind.TIMEOUT,
                feedback=f"timed out after {ctx.timeout_s:g} s",
                **base,
            )
        report = _find_report(run.stdout, nonce)
        if report is None:
            how = (
                f"exit code {run.returncode}"
                if run.returncode is not None
                else f"signal {run.signal}"
            )
            return EvalResult(
                False,
                failure=FailureKind.CRASH,
                feedback=f"the program ended ({how}) before the harness reported:\n"
                f"{run.stderr[-2000:]}",
                **base,
            )
        status = report["status"]
        if status != "ok":
            return EvalResult(
                False, failure=FailureKind(status), feedback=report["feedback"], **base
            )
        metric = report["lines"] * hw.line_cost + report["calls"] * hw.call_cost
        feedback = ""
        if ctx.want_feedback:
            hot = "\n".join(
                f"  line {n}: {count} times  `{text}`" for n, count, text in report["hot"]
            )
            feedback = (
                f"{report['lines']} lines and {report['calls']} calls executed over "
                f"{report['runs']} runs; hottest lines:\n{hot}"
            )
        return EvalResult(
            True,
            metric=float(metric),
            feedback=feedback,
            extra={"line_events": float(report["lines"]), "call_events": float(report["calls"])},
            **base,
        )


def _sibling_size(ref: str) -> int | None:
    match = SIBLING.fullmatch(ref)
    return int(match.group(1)) if match and int(match.group(1)) <= SIBLING_MAX else None


def _find_report(stdout: str, nonce: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(nonce + " "):
            return json.loads(line[len(nonce) + 1 :])
    return None


@hookimpl
def autocomp_register_backends() -> list[type[Backend]]:
    return [ToyBackend]
