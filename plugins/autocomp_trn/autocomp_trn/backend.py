"""The ``trn`` backend: AWS Trainium NKI kernels, evaluated by the NumPy NKI emulator and its cost
model (anywhere) or on a NeuronCore with the Neuron SDK (``hardware.mode``).

Built from ``autocomp-core new-backend``'s layout and kept thin on purpose: the emulator
(``emulator/``, ``evaluate.py``), Neuron mode (``neuron.py``), the problems (``problems/``) and
the knowledge pack (``knowledge/``) live in their own modules.
"""

from __future__ import annotations

import importlib.util
from functools import cached_property
from pathlib import Path
from typing import Literal

from autocomp_core import (
    IMPOSSIBLE_RESULT,
    Backend,
    BackendOptions,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    FailureKind,
    FidelityUnsupported,
    HardwareConfig,
    KnowledgePack,
    MeasuredProgram,
    Problem,
    Resources,
)
from pydantic import Field

from . import model_limits, neuron
from .emulator.hardware import GENERATIONS, Generation
from .evaluate import EmulatorEvaluator, Settings, Verdict, verification
from .problems.catalog import all_specs, spec_by_id
from .problems.spec import ProblemSpec

HERE = Path(__file__).parent
#: the custom resource one evaluation holds in Neuron mode
NEURON_CORES = "neuron_cores"


class TrnHardware(HardwareConfig):
    """``[hardware]``: which NeuronCore, and how candidates are evaluated.

    ``mode``: ``emulator`` (the NumPy NKI emulator and cost model, runs anywhere), ``neuron``
    (compile and run on a NeuronCore with the installed Neuron SDK), ``auto`` (neuron where a
    device and the SDK are found, else emulator)."""

    generation: Literal["trn1", "trn2", "trn3"] = Field(
        "trn2",
        description="NeuronCore-v3 (Trn2), NeuronCore-v4 (Trn3) or, legacy, NeuronCore-v2 (Trn1)",
    )
    mode: Literal["auto", "emulator", "neuron"] = "auto"


class TrnOptions(BackendOptions):
    """``[backend_options]``: how candidates are evaluated (not what the hardware is). Each stage's
    limit is also capped by the run's ``evaluation.timeout_s``."""

    seeds: int = Field(3, ge=1, le=8, description="random inputs each candidate is checked on")
    trace_timeout_s: float = Field(
        60.0, gt=0, description="wall-clock limit of the tracing process"
    )
    replay_timeout_s: float = Field(
        120.0, gt=0, description="wall-clock limit of the replay process"
    )
    memory_mb: int = Field(6144, ge=512, description="memory limit of each evaluation process")
    preload_steps: bool = Field(
        True,
        description="fork the trace and replay processes from one that imported the emulator "
        "(false: a fresh interpreter for each)",
    )
    neuron_cores: int | None = Field(
        None, ge=1, description="Neuron mode: NeuronCores to use (default: all)"
    )
    benchmark_iters: int = Field(
        10, ge=1, description="Neuron mode: timed iterations (P99 reported)"
    )
    benchmark_warmup: int = Field(2, ge=0, description="Neuron mode: warm-up iterations")
    neuron_timeout_s: float = Field(
        600.0,
        gt=0,
        description="Neuron mode: wall-clock limit of compiling, checking and timing one "
        "candidate on the device",
    )


class TrnBackend(Backend[TrnHardware, TrnOptions]):
    name = "trn"
    description = (
        "AWS Trainium NKI kernels: NumPy NKI emulator with a per-engine cost model, or a NeuronCore"
    )
    file_extension = ".py"
    language = "python"
    code_anchor = "import"
    metric_unit = "modelled us"
    capabilities = frozenset({Capability.HW_FEEDBACK})  # evaluate() reports per-engine busy time

    # -- mode -----------------------------------------------------------------------------
    @cached_property
    def neuron_env(self) -> neuron.NeuronEnv:
        return neuron.detect(self.hardware.generation)

    @property
    def mode(self) -> str:
        if self.hardware.mode != "auto":
            return self.hardware.mode
        return "neuron" if self.neuron_env.usable else "emulator"

    @property
    def generation(self) -> Generation:
        return GENERATIONS[self.hardware.generation]

    @cached_property
    def emulator(self) -> EmulatorEvaluator:
        o = self.options
        return EmulatorEvaluator(
            Settings(
                self.hardware.generation,
                o.seeds,
                o.trace_timeout_s,
                o.replay_timeout_s,
                o.memory_mb,
                preload=o.preload_steps,
            )
        )

    @cached_property
    def neuron_evaluator(self) -> neuron.NeuronEvaluator:
        o = self.options
        return neuron.NeuronEvaluator(
            self.neuron_env,
            self.hardware.generation,
            o.seeds,
            o.neuron_timeout_s,
            o.benchmark_warmup,
            o.benchmark_iters,
            o.neuron_cores,
        )

    # -- problems and prompts -----------------------------------------------------------
    def problems(self) -> list[Problem]:
        return [self._problem(s) for s in all_specs()]

    def load_problem(self, ref: str) -> Problem:
        return self._problem(spec_by_id(ref))

    def _problem(self, spec: ProblemSpec) -> Problem:
        lines = [
            f"Problem {spec.id}: {spec.title}. {spec.description}.",
            f"Kernel signature: {spec.entry}({', '.join(i.name for i in spec.inputs)}"
            + "".join(f", {k}={v!r}" for k, v in spec.kwargs.items())
            + "), returning the output HBM "
            "tensor(s) it creates with nl.ndarray(..., buffer=nl.shared_hbm).",
            f"Shapes: {spec.describe_shapes()}.",
            f"Correctness: every output element within {spec.atol:g} + {spec.rtol:g} x |reference| of a "
            "float64 reference, on fresh random inputs, " + _where_checked(spec),
            f"Target: {self.generation.name} NeuronCore; speed-of-light bound "
            f"{spec.lower_bound_us(self.generation):.1f} us.",
        ]
        if spec.language == "pytorch":
            lines.append(
                "The starting program is PyTorch: translate it into an NKI kernel named "
                f"{spec.entry} taking the forward() arguments as HBM tensors."
            )
        return Problem(
            id=spec.id,
            description=spec.description,
            baseline_code=spec.baseline_code(),
            baseline_path=spec.baseline_path,
            context="\n".join(lines),
            metadata={
                "suite": spec.suite,
                "language": spec.language,
                "published_ms": list(spec.published_ms) if spec.published_ms else None,
                **spec.features(),
            },
        )

    def held_out_problem(self, problem: Problem) -> Problem | None:
        """The problem at its declared held-out shape (``<id>@heldout``: smaller than the
        searched one, keeping the shape rule its prompt states), or None where the shape is fixed
        (``ProblemSpec.fixed_shape`` says why). An ``@full`` problem's is its checked shape."""
        spec = spec_by_id(problem.id)
        return self._problem(spec.at_held_out_shape()) if spec.has_held_out else None

    def knowledge(self, problem: Problem) -> KnowledgePack:
        return KnowledgePack.from_dir(HERE / "knowledge")

    def fidelity_programs(self, source: Path) -> list[MeasuredProgram]:
        """The original system's published optimization traces with their P99 on trn1, each
        program as our problem at the measured shapes (``fidelity.CHAINS``). Refused on any
        other generation: the comparison is only meaningful on the hardware they ran on."""
        from .fidelity import MEASURED_ON, measured_programs

        if self.hardware.generation != MEASURED_ON:
            raise FidelityUnsupported(
                f"the published programs were measured on {MEASURED_ON}, the backend targets "
                f"{self.hardware.generation}: run with --hw generation={MEASURED_ON}"
            )

        def problem_for(problem_id: str) -> tuple[Problem, str]:
            spec = spec_by_id(problem_id)
            return self._problem(spec), spec.entry

        return measured_programs(source, problem_for)

    def rules(self, problem: Problem) -> list[str]:
        gen = self.generation
        where = (
            "Latency is modelled by the NKI emulator's per-engine cost model (not measured on hardware)."
            if self.mode == "emulator"
            else "Latency is the P99 measured on a NeuronCore."
        )
        return [
            f"The target is a {gen.name} {gen.core}{' (legacy)' if gen.legacy else ''}: SBUF "
            f"{gen.sbuf_bytes_per_partition // 1024} KiB and PSUM "
            f"{gen.psum_bytes_per_partition // 1024} KiB per partition, TensorE {gen.pe_ghz} GHz, "
            f"VectorE {gen.dve_ghz} GHz, ScalarE {gen.act_ghz} GHz. {where}"
        ]

    # -- evaluation -----------------------------------------------------------------------
    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        spec = spec_by_id(problem.id)  # KeyError for a problem this backend does not have
        if self.mode == "neuron":
            verdict = await self.neuron_evaluator.evaluate(
                spec, code, ctx.seed, timeout_s=ctx.timeout_s
            )
            unit = "us"
        else:
            verdict = await self.emulator.evaluate(spec, code, ctx.seed, timeout_s=ctx.timeout_s)
            unit = "modelled us"
        if verdict.status == "infra_error":  # the evaluator's own failure: the engine records it
            raise RuntimeError(f"the trn evaluator failed on {problem.id}: {verdict.message}")
        result = to_eval_result(
            verdict, unit, spec.lower_bound_us(self.generation), ctx.want_feedback
        )
        if self.mode != "neuron":
            result.verification = verification(spec, code, ctx.seed, self.emulator.settings.seeds)
            if verdict.ok:  # what the cost model does not see, where it matters (model_limits.py)
                result.verification["model_limits"] = verdict.details.get("model_limits", [])
        return result

    def metric_lower_bound(self, problem: Problem) -> float | None:
        return spec_by_id(problem.id).lower_bound_us(self.generation)

    def resources(self) -> Resources:
        if (
            self.mode == "neuron"
        ):  # one NeuronCore per evaluation, as many at once as this machine has
            cores = self.neuron_env.cores
            if self.options.neuron_cores:
                cores = min(cores, self.options.neuron_cores)
            return Resources(
                cpus=1, memory_mb=8192, custom={NEURON_CORES: 1}, available={NEURON_CORES: cores}
            )
        # tracing, then replaying: one single-threaded process at a time
        return Resources(cpus=1, memory_mb=self.options.memory_mb)

    async def aclose(self) -> None:
        """Nothing stays warm: every evaluation starts and ends its own processes. The NeuronCore
        queue belongs to the run that used it, so a later run builds a fresh one."""
        self.__dict__.pop("neuron_evaluator", None)

    def doctor(self) -> list[DoctorCheck]:
        def has(module: str) -> bool:
            return importlib.util.find_spec(module) is not None

        env = self.neuron_env
        checks = [
            DoctorCheck("numpy", has("numpy"), "", "pip install numpy"),
            DoctorCheck(
                "ml_dtypes (bf16/fp8 storage)", has("ml_dtypes"), "", "pip install ml-dtypes"
            ),
            DoctorCheck("NKI emulator", True, "built in; used where no NeuronCore is found"),
            DoctorCheck(
                "torch (optional: PyTorch-source problems)",
                has("torch"),
                "",
                "pip install 'autocomp-trn[torch]'",
            ),
        ]
        need_neuron = self.hardware.mode == "neuron"
        checks.append(
            DoctorCheck(
                "Neuron devices" + ("" if need_neuron else " (optional)"),
                bool(env.devices) or not need_neuron,
                ", ".join(env.devices) or "none found (emulator mode)",
                "run on a Trainium instance with the Neuron driver (aws-neuronx-dkms)",
            )
        )
        optional = "" if need_neuron else " (optional)"
        checks.append(
            DoctorCheck(
                "Neuron SDK NKI" + optional,
                env.v1 or env.v2 or not need_neuron,
                "nki" if env.v2 else "neuronxcc.nki (legacy)" if env.v1 else "not installed",
                "pip install nki --extra-index-url=https://pip.repos.neuron.amazonaws.com",
            )
        )
        timing = env.nrtpy or env.profiler
        checks.append(
            DoctorCheck(
                "Neuron timing (nrtpy or neuron-explorer)" + optional,
                bool(timing) or not need_neuron,
                timing or "none found: a current-API kernel in Neuron mode cannot be timed",
                "install nrtpy in this Python (or set AUTOCOMP_TRN_NRTPY_PYTHON), or neuron-explorer",
            )
        )
        return checks


def _where_checked(spec: ProblemSpec) -> str:
    """The shapes a program must be right at, as the prompt says it."""
    if not spec.has_held_out:
        return "at exactly the shapes above."
    return (
        "at the shapes above and at other shapes of this problem's family that keep these "
        f"invariants: {spec.shape_rule}. Read every size from the input tensors' shapes; never "
        "hard-code a size."
    )


def to_eval_result(
    v: Verdict, unit: str, lower_bound_us: float, want_feedback: bool = True
) -> EvalResult:
    """A candidate's verdict as the engine's result; the failure kind is the verdict's status."""
    lines = [f"status: {v.status}"]
    if v.message:
        lines.append(v.message)
    extra: dict[str, float] = {f"{k}": float(s) for k, s in v.phases_s.items()}
    if v.ok and v.latency_us is not None:
        lines.append(
            f"latency {v.latency_us:.2f} {unit}; speed-of-light bound {lower_bound_us:.2f} us "
            f"({100 * lower_bound_us / v.latency_us:.0f}% of the bound)"
        )
        extra.update(
            latency_us=float(v.latency_us),
            lower_bound_us=float(lower_bound_us),
            instructions=float(v.details.get("instructions", 0)),
        )
        for engine, busy in (v.details.get("busy_us") or {}).items():
            extra[f"busy_{engine}_us"] = float(busy)
        if want_feedback and v.summary:
            lines.append(v.summary)
        limits = model_limits.section(v.details.get("model_limits") or [])
        if want_feedback and limits:
            lines.append(limits)
    ok = v.ok and v.latency_us is not None
    # ok without a latency: crash; a latency below the bound: the engine's impossible_result
    failure = (
        None
        if ok
        else FailureKind.CRASH
        if v.ok
        else FailureKind.REJECTED
        if v.status == IMPOSSIBLE_RESULT
        else FailureKind(v.status)
    )
    return EvalResult(
        correct=ok,
        metric=float(v.latency_us) if ok else None,
        unit=unit,
        failure=failure,
        feedback="\n".join(lines),
        extra=extra,
        status=v.status,
        stderr="" if ok else v.message,
        duration_s=sum(v.phases_s.values()),
    )
