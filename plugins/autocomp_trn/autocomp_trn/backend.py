"""The ``trn`` backend: AWS Trainium NKI kernels, evaluated by the NumPy NKI emulator and its cost
model (anywhere) or on a NeuronCore with the Neuron SDK (``hardware.mode``).

Kept thin on purpose: problems, prompts and evaluation live in their own modules.
"""
from __future__ import annotations

import importlib.util
import os
from functools import cached_property
from pathlib import Path
from typing import Any

from autocomp_core.backend import (
    Backend,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    FailureKind,
    HardwareConfig,
    KnowledgePack,
    Problem,
    Resources,
)
from autocomp_core.validity import IMPOSSIBLE_RESULT

from . import neuron
from .config import TrnHardware, TrnOptions
from .emulator.hardware import GENERATIONS
from .evaluate import EmulatorEvaluator, Settings, Verdict
from .problems.catalog import all_specs, spec_by_id
from .problems.spec import ProblemSpec

KNOWLEDGE_DIR = Path(__file__).parent / "knowledge"
FAILURE = {"compile_error": FailureKind.COMPILE_ERROR, "wrong_answer": FailureKind.WRONG_ANSWER,
           "rejected": FailureKind.REJECTED, "timeout": FailureKind.TIMEOUT, "crash": FailureKind.CRASH,
           "infra_error": FailureKind.INFRA_ERROR, IMPOSSIBLE_RESULT: FailureKind.REJECTED}


class TrnBackend(Backend):
    name = "trn"
    description = "AWS Trainium NKI kernels: NumPy NKI emulator with a per-engine cost model, or a NeuronCore"
    file_extension = ".py"
    language = "python"
    code_anchor = "import"
    metric_unit = "modelled us"
    hardware_config_type = TrnHardware
    capabilities = frozenset({Capability.HW_FEEDBACK, Capability.TRANSLATION, Capability.LOWER_BOUND})
    option_names = frozenset(TrnOptions.model_fields)

    hardware: TrnHardware

    def __init__(self, hardware: HardwareConfig | dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None) -> None:
        super().__init__(hardware, options)
        self.opts = TrnOptions(**self.options)

    # ------------------------------------------------------------------ mode
    @cached_property
    def neuron_env(self) -> neuron.NeuronEnv:
        return neuron.detect(self.hardware.generation)

    @property
    def mode(self) -> str:
        if self.hardware.mode != "auto":
            return self.hardware.mode
        return "neuron" if self.neuron_env.usable else "emulator"

    @cached_property
    def emulator(self) -> EmulatorEvaluator:
        o = self.opts
        return EmulatorEvaluator(Settings(self.hardware.generation, o.seeds, o.trace_timeout_s, o.replay_timeout_s,
                                          o.memory_mb))

    @cached_property
    def neuron_evaluator(self) -> neuron.NeuronEvaluator:
        o = self.opts
        return neuron.NeuronEvaluator(self.neuron_env, self.hardware.generation, o.seeds,
                                      o.trace_timeout_s + o.replay_timeout_s, o.benchmark_warmup, o.benchmark_iters,
                                      o.neuron_cores)

    # ------------------------------------------------------------------ problems and prompts
    def problems(self) -> list[Problem]:
        return [self._problem(s) for s in all_specs()]

    def load_problem(self, ref: str) -> Problem:
        return self._problem(spec_by_id(ref))

    def _problem(self, spec: ProblemSpec) -> Problem:
        gen = GENERATIONS[self.hardware.generation]
        lines = [f"Problem {spec.id}: {spec.title}. {spec.description}.",
                 f"Kernel signature: {spec.entry}({', '.join(i.name for i in spec.inputs)}"
                 + "".join(f", {k}={v!r}" for k, v in spec.kwargs.items()) + "), returning the output HBM "
                 "tensor(s) it creates with nl.ndarray(..., buffer=nl.shared_hbm).",
                 f"Shapes: {spec.describe_shapes()}.",
                 f"Correctness: every output element within {spec.atol:g} + {spec.rtol:g} x |reference| of a "
                 "float64 reference, on fresh random inputs, at exactly the shapes above.",
                 f"Target: {gen.name} NeuronCore; speed-of-light bound {spec.lower_bound_us(gen):.1f} us."]
        if spec.language == "pytorch":
            lines.append("The starting program is PyTorch: translate it into an NKI kernel named "
                         f"{spec.entry} taking the forward() arguments as HBM tensors.")
        return Problem(id=spec.id, description=spec.description, baseline_code=spec.baseline_code(),
                       baseline_path=spec.baseline_path, context="\n".join(lines),
                       metadata={"suite": spec.suite, "language": spec.language,
                                 "published_ms": list(spec.published_ms) if spec.published_ms else None})

    def knowledge(self, problem: Problem) -> KnowledgePack:
        return KnowledgePack.from_dir(KNOWLEDGE_DIR)

    def rules(self, problem: Problem) -> list[str]:
        gen = GENERATIONS[self.hardware.generation]
        where = ("Latency is modelled by the NKI emulator's per-engine cost model (not measured on hardware)."
                 if self.mode == "emulator" else "Latency is the P99 measured on a NeuronCore.")
        return [f"The target is a {gen.name} NeuronCore: SBUF {gen.sbuf_bytes_per_partition // 1024} KiB and "
                f"PSUM 16 KiB per partition, TensorE {gen.pe_ghz} GHz, VectorE {gen.dve_ghz} GHz, ScalarE "
                f"{gen.act_ghz} GHz. {where}"]

    # ------------------------------------------------------------------ evaluation
    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        spec = spec_by_id(problem.id)
        if self.mode == "neuron":
            verdict = await self.neuron_evaluator.evaluate(spec, code, ctx.seed)
            unit = "us"
        else:
            verdict = await self.emulator.evaluate(spec, code, ctx.seed)
            unit = "modelled us"
        return to_eval_result(verdict, unit, spec.lower_bound_us(GENERATIONS[self.hardware.generation]),
                              ctx.want_feedback)

    def metric_lower_bound(self, problem: Problem) -> float | None:
        return spec_by_id(problem.id).lower_bound_us(GENERATIONS[self.hardware.generation])

    def resources(self) -> Resources:
        if self.mode == "neuron":
            return Resources(max_parallel=max(1, len(self.neuron_evaluator.cores)), memory_mb_per_eval=8192)
        return Resources(max_parallel=self.opts.parallel or max(1, (os.cpu_count() or 1) // 2),
                         memory_mb_per_eval=self.opts.memory_mb)

    def doctor(self) -> list[DoctorCheck]:
        def has(module: str) -> bool:
            return importlib.util.find_spec(module) is not None

        env = self.neuron_env
        checks = [DoctorCheck("numpy", has("numpy"), "", "pip install numpy"),
                  DoctorCheck("ml_dtypes (bf16/fp8 storage)", has("ml_dtypes"), "", "pip install ml-dtypes"),
                  DoctorCheck("NKI emulator", True, "built in; used where no NeuronCore is found"),
                  DoctorCheck("torch (optional: PyTorch-source problems)", has("torch"), "",
                              "pip install 'autocomp-trn[torch]'")]
        need_neuron = self.hardware.mode == "neuron"
        checks.append(DoctorCheck("Neuron devices" + ("" if need_neuron else " (optional)"),
                                  bool(env.devices) or not need_neuron,
                                  ", ".join(env.devices) or "none found (emulator mode)",
                                  "run on a Trainium instance with the Neuron driver (aws-neuronx-dkms)"))
        checks.append(DoctorCheck("Neuron SDK NKI" + ("" if need_neuron else " (optional)"),
                                  env.v1 or env.v2 or not need_neuron,
                                  "neuronxcc.nki" if env.v1 else "nki" if env.v2 else "not installed",
                                  "pip install neuronx-cc --extra-index-url=https://pip.repos.neuron.amazonaws.com"))
        return checks


def to_eval_result(v: Verdict, unit: str, lower_bound_us: float, want_feedback: bool = True) -> EvalResult:
    lines = [f"status: {v.status}"]
    if v.message:
        lines.append(v.message)
    extra: dict[str, float] = {f"{k}": float(s) for k, s in v.phases_s.items()}
    if v.ok and v.latency_us is not None:
        lines.append(f"latency {v.latency_us:.2f} {unit}; speed-of-light bound {lower_bound_us:.2f} us "
                     f"({100 * lower_bound_us / v.latency_us:.0f}% of the bound)")
        extra.update(latency_us=float(v.latency_us), lower_bound_us=float(lower_bound_us),
                     instructions=float(v.details.get("instructions", 0)))
        for engine, busy in (v.details.get("busy_us") or {}).items():
            extra[f"busy_{engine}_us"] = float(busy)
        if want_feedback and v.summary:
            lines.append(v.summary)
    ok = v.ok and v.latency_us is not None
    return EvalResult(correct=ok, metric=float(v.latency_us) if ok else None, unit=unit,
                      failure=None if ok else FAILURE.get(v.status, FailureKind.CRASH), feedback="\n".join(lines),
                      extra=extra, status=v.status, stderr="" if ok else v.message,
                      duration_s=sum(v.phases_s.values()))
