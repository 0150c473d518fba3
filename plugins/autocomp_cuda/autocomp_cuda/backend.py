"""The ``cuda`` backend: KernelBench-format problems evaluated by the hardened harness."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import os
import shutil
import typing
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from autocomp_core import (
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
    evaluation_seeds,
)
from pydantic import Field, create_model

from . import cache, family, fidelity, gate, importer
from .harness import Harness, Settings, Verdict
from .problemset import ProblemSpec, baseline_source, describe_tolerance, suite

KNOWLEDGE_DIR = Path(__file__).parent / "knowledge"

#: Dense bf16 tensor-core peak (GFLOP/s) and memory bandwidth (GB/s): the fastest legal path
#: for a kernel that stays within tolerance, so nothing honest beats the bound.
GPU_PEAKS = {
    "H200": (989_000, 4_800),
    "H100": (989_000, 3_350),
    "A100": (312_000, 2_039),
    "L40S": (362_000, 864),
    "RTX 4090": (165_000, 1_008),
    "A10G": (125_000, 600),
    "L4": (121_000, 300),
    "T4": (65_000, 320),
}

STATUS_TO_FAILURE = {
    "compile_error": FailureKind.COMPILE_ERROR,
    "load_error": FailureKind.CRASH,
    "runtime_error": FailureKind.CRASH,
    "cuda_fault": FailureKind.CRASH,
    "oom": FailureKind.CRASH,
    "timeout": FailureKind.TIMEOUT,
    "mismatch": FailureKind.WRONG_ANSWER,
    "hack_suspected": FailureKind.REJECTED,
    "infra_error": FailureKind.INFRA_ERROR,
}


class CudaHardware(HardwareConfig):
    """Where candidates run. ``cpu`` runs the same protocol with a host timer (CI, laptops)."""

    device: Literal["cuda", "cpu"] = "cpu"
    gpus: list[int] = Field(
        default_factory=lambda: [0], description="GPU indices; one evaluation slot each"
    )
    gpu_name: str = Field("", description="e.g. H100, A100, RTX 4090: selects roofline peaks")
    peak_gflops: float | None = Field(
        None, gt=0, description="override: peak GFLOP/s for the roofline bound"
    )
    bandwidth_gbs: float | None = Field(None, gt=0, description="override: memory bandwidth GB/s")


#: Settings fields that come from [hardware] (the device, the roofline peaks) or whose default
#: depends on it (the size tier): every other Settings field is a [backend_options] key.
NOT_OPTIONS = ("device", "size", "peak_gflops", "bandwidth_gbs")
HARNESS_OPTIONS = [f for f in dataclasses.fields(Settings) if f.name not in NOT_OPTIONS]


class _CudaOptions(BackendOptions):
    size: Literal["tiny", "full"] | None = Field(
        None, description="problem size tier; default full on a GPU, tiny on the CPU"
    )
    cache_dir: Path | None = Field(
        None,
        description="references and builds; default $AUTOCOMP_CUDA_CACHE or the user cache dir",
    )
    compile_workers: int | None = Field(
        None, ge=1, description="candidates built at once; default half the CPUs"
    )
    kernelbench_path: Path | None = Field(None, description="a KernelBench checkout to import")
    kernelbench_levels: tuple[int, ...] = (1, 2, 3, 4)
    size_overrides: dict[str, dict[str, Any]] | None = None
    include_controls: bool = Field(False, description="list the gate's control problems too")
    fidelity_gpu_class: str = Field(
        "",
        description=(
            "autocomp-core fidelity: the published KernelBench timing folder or GPU class to "
            "compare with (e.g. H100_Modal, H100); default the nearest to our GPU by name"
        ),
    )
    fidelity_levels: tuple[int, ...] = Field((1, 2), description="autocomp-core fidelity: levels")
    fidelity_sample: int = Field(
        0, ge=0, description="autocomp-core fidelity: problems drawn per level (0: all)"
    )
    fidelity_seed: int = Field(0, description="autocomp-core fidelity: the sample's seed")
    problem_gate: Literal["refuse", "warn"] = Field(
        "refuse",
        description=(
            "a problem the quality gate refuses (a trivial answer passes it, it is "
            "nondeterministic...): 'refuse' evaluates no program on it; 'warn' evaluates, "
            "and every verdict says the problem failed the gate"
        ),
    )


#: ``[backend_options]``: the fields above, and one per harness setting (``trials``,
#: ``reps``, ``warm_workers``...) typed and defaulted as in ``harness.Settings``.
CudaOptions = create_model(
    "CudaOptions",
    __base__=_CudaOptions,
    __module__=__name__,
    **{f.name: (typing.get_type_hints(Settings)[f.name], f.default) for f in HARNESS_OPTIONS},
)


class CudaBackend(Backend[CudaHardware, _CudaOptions]):
    name = "cuda"
    description = "NVIDIA GPUs (and CPU for CI): KernelBench-format PyTorch problems, CUDA/C++/Triton candidates"
    file_extension = ".py"
    language = "python"
    code_anchor = "class ModelNew"
    metric_unit = "ms"
    options_type = CudaOptions  # typed as _CudaOptions: its fields, and the harness settings
    capabilities = frozenset({Capability.HW_FEEDBACK})

    # ------------------------------------------------------------------ configuration
    @cached_property
    def settings(self) -> Settings:
        hw, o = self.hardware, self.options
        peaks = (
            next(
                (v for k, v in GPU_PEAKS.items() if k.lower() in hw.gpu_name.lower()), (None, None)
            )
            if hw.device == "cuda"
            else (None, None)
        )
        return Settings(
            device=hw.device,
            size=o.size or ("full" if hw.device == "cuda" else "tiny"),
            peak_gflops=hw.peak_gflops or peaks[0],
            bandwidth_gbs=hw.bandwidth_gbs or peaks[1],
            **o.model_dump(include={f.name for f in HARNESS_OPTIONS}),
        )

    @cached_property
    def harness(self) -> Harness:
        return Harness(
            Path(self.options.cache_dir or cache.usual_roots()[0]).expanduser(),
            self.settings,
            gpu_ids=self.hardware.gpus,
            compile_workers=self.compile_workers,
        )

    @property
    def compile_workers(self) -> int:
        """Candidates compiled at once (each build itself runs MAX_JOBS compiler processes)."""
        return self.options.compile_workers or max(1, (os.cpu_count() or 1) // 2)

    async def aclose(self) -> None:
        """Stop the harness's warm workers (the engine calls this when a run ends)."""
        if "harness" in self.__dict__:
            await self.harness.aclose()

    # ------------------------------------------------------------------ problems
    @cached_property
    def _specs(self) -> dict[str, ProblemSpec]:
        o = self.options
        specs = {s.id: s for s in suite(include_controls=o.include_controls)}
        if o.kernelbench_path:
            for spec in importer.import_kernelbench(
                o.kernelbench_path, o.kernelbench_levels, o.size_overrides
            ):
                specs[spec.id] = spec
        return specs

    def spec(self, ref: str) -> ProblemSpec:
        if ref.endswith(family.HELD_OUT_SUFFIX):
            base = self.spec(family.base_id(ref))
            held_out = family.held_out_spec(base, self.settings.size)
            if held_out is None:
                raise KeyError(
                    f"problem {base.id!r} has no held-out shape at size tier {self.settings.size!r}"
                )
            return held_out
        if ref in self._specs:
            return self._specs[ref]
        path = Path(ref.removeprefix("file:")).expanduser()
        if path.suffix == ".py" and path.is_file():
            spec = importer.import_file(path)
            self._specs[spec.id] = spec
            return spec
        for spec in suite(include_controls=True):  # controls load by id even when not listed
            if spec.id == ref:
                return spec
        known = ", ".join(self._specs)
        raise KeyError(
            f"unknown problem {ref!r} for backend 'cuda' (known: {known}; or a path to a .py reference)"
        )

    def _problem(self, spec: ProblemSpec) -> Problem:
        sizes = {**spec.constants, **spec.sizes(self.settings.size)}
        shown = (
            ", ".join(f"{k}={v}" for k, v in sizes.items() if k.isupper() or k in spec.tiny)
            or "as in the file"
        )
        if self.settings.size == "tiny" and not spec.tiny:
            shown = (
                "the file's size constants, halved where needed to fit the CPU (each evaluation's feedback "
                "says which sizes ran); write kernels that work for any size"
            )
        context = (
            f"Problem {spec.id}: {spec.description}\n"
            f"Size tier '{self.settings.size}' on device '{self.settings.device}': {shown}.\n"
            f"Tolerance: |out - ref_fp64| <= atol x RMS(ref) + rtol x |ref| element-wise with "
            f"{describe_tolerance(spec.atol, spec.rtol)}; "
            "integer outputs must match exactly.\n"
            "Write a complete Python file defining class ModelNew(nn.Module) with the same constructor and "
            "forward arguments as Model; module-level get_inputs/get_init_inputs are not needed."
        )
        if spec.buffers_mutate:
            context += "\nBatchNorm runs in training mode: use batch statistics, do not fold it into an affine."
        context += held_out_rule(spec, self.settings.size)
        if spec.off_distribution:
            context += (
                "\nCorrectness is checked on the problem's own inputs and also on signed, shifted "
                "and scaled versions of them, with weights that the problem initialises to constants "
                "(norm weights and biases) re-drawn at random: compute the operator for any "
                "input and any weights, and keep the reference's parameter names (weights are "
                "copied into ModelNew by name)."
            )
        return Problem(
            id=spec.id,
            description=spec.description,
            baseline_code=baseline_source(spec),
            baseline_path=spec.path,
            context=context,
            metadata={
                "level": spec.level,
                "tags": spec.tags,
                "origin": spec.origin,
                "reference_code": spec.source,
                "control": spec.control,
                **family.features(spec, self.settings.size),
            },
        )

    def problems(self) -> list[Problem]:
        return [self._problem(s) for s in self._specs.values()]

    def load_problem(self, ref: str) -> Problem:
        return self._problem(self.spec(ref))

    def held_out_problem(self, problem: Problem) -> Problem | None:
        """The problem at its held-out shape for the run's size tier (``family.py``)."""
        spec = family.held_out_spec(self.spec(problem.id), self.settings.size)
        return None if spec is None else self._problem(spec)

    async def check_problem(self, problem: Problem | str, seed: int = 0) -> gate.GateReport:
        """The quality gate for one problem (ours, imported, or a user file)."""
        spec = self.spec(problem if isinstance(problem, str) else problem.id)
        return await gate.check_problem(self.harness, spec, seed)

    async def gate_report(self, spec: ProblemSpec) -> gate.GateReport:
        """The gate's verdict on a problem, found once per backend (its reference is cached
        on disk, so a later process reads it back)."""
        lock = self._gate_locks.setdefault(spec.id, asyncio.Lock())
        async with lock:
            if spec.id not in self._gate_reports:
                self._gate_reports[spec.id] = await gate.check_problem(self.harness, spec)
            return self._gate_reports[spec.id]

    @cached_property
    def _gate_reports(self) -> dict[str, gate.GateReport]:
        return {}

    @cached_property
    def _gate_locks(self) -> dict[str, asyncio.Lock]:
        return {}

    # ------------------------------------------------------------------ prompts
    def knowledge(self, problem: Problem) -> KnowledgePack:
        return KnowledgePack.from_dir(KNOWLEDGE_DIR)

    def rules(self, problem: Problem) -> list[str]:
        torch_version, cuda_version = _torch_versions()
        versions = (
            f"PyTorch {torch_version}, CUDA {cuda_version or 'none (CPU build)'}"
            if torch_version
            else "PyTorch (not installed)"
        )
        hw = self.hardware
        if hw.device == "cuda":
            where = f"The target is an NVIDIA {hw.gpu_name or 'GPU'} with {versions}."
        else:
            where = (
                f"The target is the CPU ({versions}): kernels are C++ through load_inline (cpp_sources, "
                "no cuda_sources) or Triton (run by Triton's interpreter, for correctness only)."
            )
        return [where]

    # ------------------------------------------------------------------ evaluation
    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        spec = self.spec(problem.id)
        # A verdict on a problem the harness cannot judge means nothing (ReLU where the
        # input itself passes): the gate's verdict on the problem comes first (a held-out
        # shape's is its problem's).
        report = await self.gate_report(self.spec(family.base_id(problem.id)))
        if not report.judgeable and self.options.problem_gate == "refuse":
            return gate_refusal(report)
        # Inputs (and weights) no candidate can know in advance, yet fixed by (run seed,
        # problem, program, cache): a verdict replays exactly on the same cache, and no other
        # cache holds references for these inputs (cache.salt).
        (seed,) = evaluation_seeds(ctx.seed, f"{problem.id}\0{self.harness.salt}", code, 1)
        verdict = await self.harness.evaluate(spec, code, seed=seed)
        if not report.judgeable:
            verdict.notes.insert(0, gate_warning(report))
            verdict.flags.append("problem_failed_gate")
        result = to_eval_result(verdict, ctx.want_feedback or not report.judgeable)
        result.verification = self.harness.verification(spec, seed, verdict)
        if spec.off_distribution:
            result.verification.setdefault("checks", []).append(
                "inputs off the problem's distribution: trials draw from its own inputs and from "
                "signed, all-positive, all-negative and wide maps of them (input_plan; a map where "
                "the reference is undefined falls back to the own inputs); constant-initialised "
                "weights re-drawn"
            )
        result.verification["problem_gate"] = (
            "passed"
            if report.passed
            else f"FAILED ({report.category}): {'; '.join(report.reasons)}"
        )
        if verdict.flags:  # correct, yet a check warned: the engine labels it "flagged"
            result.verification["flags"] = list(verdict.flags)
        return result

    # ------------------------------------------------------------------ fidelity
    def fidelity_programs(self, source: Path) -> list[MeasuredProgram]:
        """KernelBench's published baseline times of a level sample, each problem's own Model
        as the program (``fidelity.py``); refused on the CPU device."""
        if self.hardware.device != "cuda":
            raise FidelityUnsupported(fidelity.CPU_REFUSAL)
        o = self.options
        sets = fidelity.read_timing_sets(source)
        name = "" if o.fidelity_gpu_class else fidelity.device_name(self.hardware.gpus[0])
        timings = fidelity.choose_timing_set(sets, name, o.fidelity_gpu_class)

        def to_problem(spec: ProblemSpec) -> Problem:
            self._specs[spec.id] = spec  # evaluate finds it by id, as an imported problem
            return self._problem(spec)

        return fidelity.measured_programs(
            source,
            timings,
            to_problem,
            levels=o.fidelity_levels,
            per_level=o.fidelity_sample,
            seed=o.fidelity_seed,
            compiled=self.settings.compile_baseline,
        )

    def metric_lower_bound(self, problem: Problem) -> float | None:
        try:
            spec = self.spec(problem.id)
        except KeyError:
            return None
        return self.harness.refusal_bound_ms(spec)

    def resources(self) -> Resources:
        hw = self.hardware
        if hw.device == "cuda":
            # Candidates compile while others time: the harness still times one at a time per GPU.
            return Resources(
                cpus=1, gpus=1, memory_mb=16384, parallel=len(hw.gpus) + self.compile_workers
            )
        # On the CPU a build beside a timing loop would disturb it: one evaluation at a time.
        return Resources(cpus=1, memory_mb=self.settings.memory_mb or 8192, parallel=1)

    def doctor(self) -> list[DoctorCheck]:
        # On the CPU device the engine never imports torch (it saves every command ~2 s):
        # its metadata says whether it is installed. A GPU check must import it to ask CUDA.
        checks = [_torch_check()]
        if self.settings.device == "cuda" and checks[0].ok:
            checks = _gpu_checks()
        checks.append(
            DoctorCheck(
                "C++ compiler (g++)",
                bool(shutil.which("g++")),
                shutil.which("g++") or "missing",
                "apt-get install -y g++",
            )
        )
        checks.append(
            DoctorCheck(
                "ninja",
                bool(shutil.which("ninja")) or _has_module("ninja"),
                shutil.which("ninja") or "",
                "pip install ninja",
            )
        )
        nvcc = shutil.which("nvcc") or (
            "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else ""
        )
        checks.append(
            DoctorCheck(
                "nvcc",
                bool(nvcc) or self.settings.device == "cpu",
                nvcc or "not found (needed for CUDA candidates on a GPU)",
                "install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)",
            )
        )
        checks.append(
            DoctorCheck(
                "triton",
                _has_module("triton"),
                "for Triton candidates",
                "pip install 'autocomp-cuda[triton]'",
                required=False,
            )
        )
        return checks


def held_out_rule(spec: ProblemSpec, size: str) -> str:
    """The prompt's sentence on the held-out check (it names no held-out size)."""
    if family.held_out_spec(spec, size) is None:
        return ""
    if spec.origin == "suite":
        kept = (
            "that keep the Model's own constraints and each size's divisibility by the powers "
            "of two (up to 128, and up to half the size) that divide the sizes above"
        )
    else:
        kept = "that keep the Model's structure (its size constants halved further)"
    return (
        f"\nThe best programs are also checked at other sizes of this problem's family {kept}: "
        "read every size from the inputs' shapes and the constructor's arguments, never "
        "hard-code the sizes above; a program right only at them is labelled overfit."
    )


def _torch_versions() -> tuple[str | None, str | None]:
    """torch's version and the CUDA version it was built for, read from its files: the engine's
    process does not import torch (the workers and the judge do)."""
    import importlib.util
    import re
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        return None, None
    spec = importlib.util.find_spec("torch")
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()  # type: ignore[union-attr]
    except (OSError, StopIteration, TypeError, AttributeError):
        return torch_version, None
    found = re.search(r"^cuda\b[^=]*=\s*'([^']+)'", text, re.M)
    return torch_version, found.group(1) if found else None


TORCH_FIX = "pip install 'torch>=2.13,<2.15'"


def _torch_check() -> DoctorCheck:
    """torch installed, and its version, from its metadata (importing it takes seconds)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    if not version or not _has_module("torch"):
        return DoctorCheck("torch", False, "not installed", TORCH_FIX)
    return DoctorCheck("torch", True, version)


def _gpu_checks() -> list[DoctorCheck]:
    """torch imported, and the GPU it sees."""
    try:
        import torch
    except ImportError as exc:
        return [DoctorCheck("torch", False, f"not importable: {exc}", TORCH_FIX)]
    ok = torch.cuda.is_available()
    return [
        DoctorCheck("torch", True, torch.__version__),
        DoctorCheck(
            "CUDA device",
            ok,
            torch.cuda.get_device_name(0) if ok else "torch sees no GPU",
            "install a CUDA build of torch and the NVIDIA driver",
        ),
    ]


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def gate_warning(report: gate.GateReport) -> str:
    return (
        f"WARNING: problem {report.problem} FAILED the quality gate ({report.category}: "
        f"{'; '.join(report.reasons)}); this verdict cannot tell a right program from a wrong "
        'one (problem_gate = "warn")'
    )


def gate_refusal(report: gate.GateReport) -> EvalResult:
    """No program is evaluated on a problem the gate refuses (``problem_gate = "refuse"``)."""
    feedback = (
        f"status: problem_refused\nproblem {report.problem} fails the quality gate "
        f"({report.category}: {'; '.join(report.reasons)}), so no verdict on a program for it "
        "would mean anything; `autocomp-core cuda gate` explains, and the backend option "
        'problem_gate = "warn" evaluates anyway, every verdict marked'
    )
    return EvalResult(
        correct=False,
        metric=None,
        unit="ms",
        failure=FailureKind.INFRA_ERROR,
        feedback=feedback,
        status="problem_refused",
        verification={"problem_gate": f"FAILED ({report.category}): {'; '.join(report.reasons)}"},
    )


def to_eval_result(v: Verdict, want_feedback: bool = True) -> EvalResult:
    lines = [f"status: {v.status}"]
    if v.message:
        lines.append(v.message)
    if v.status == "ok":
        lines.append(
            f"candidate {v.candidate_ms:.4g} ms (IQR {v.candidate_iqr_ms or 0:.2g}) vs eager baseline "
            f"{v.baseline_ms:.4g} ms, measured interleaved: speedup {v.speedup or 0:.3g}x; "
            f"worst error {v.error_ratio or 0:.3g}x the tolerance"
        )
        if v.compiled_baseline_ms:
            lines.append(
                f"torch.compile baseline {v.compiled_baseline_ms:.4g} ms: speedup {v.speedup_vs_compiled:.3g}x"
            )
    if want_feedback:
        lines += v.notes
    if v.detail and v.status not in ("ok", "mismatch"):
        lines.append(v.detail[-1500:])
    extra: dict[str, float] = {}
    for key in (
        "baseline_ms",
        "speedup",
        "candidate_iqr_ms",
        "error_ratio",
        "compiled_baseline_ms",
        "speedup_vs_compiled",
    ):
        value = getattr(v, key)
        if value is not None:
            extra[key] = float(value)
    extra["excluded_from_fast_p"] = 0.0 if v.scored else 1.0
    if v.build_cache_hit is not None:
        extra["build_cache_hit"] = 1.0 if v.build_cache_hit else 0.0
    for name, secs in v.phases_s.items():
        extra[f"{name}_s"] = float(secs)
    for name, secs in v.breakdown_s.items():
        extra[f"eval_{name}_s"] = float(secs)
    ok = v.status == "ok"
    return EvalResult(
        correct=ok,
        metric=v.candidate_ms if ok else None,
        unit="ms",
        failure=None if ok else STATUS_TO_FAILURE.get(v.status, FailureKind.CRASH),
        feedback="\n".join(lines),
        extra=extra,
        status=v.status,
        stderr=v.detail if not ok else "",
        duration_s=sum(v.phases_s.values()),
    )
