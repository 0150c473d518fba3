"""GemminiBackend: the autocomp Backend for Gemmini (bare-metal RISC-V + our Gemmini model)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from autocomp_core import (
    Backend,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    KnowledgePack,
    Problem,
    Resources,
    evaluation_seeds,
)

from . import catalog, evaluate, family, feedback, toolchain
from .config import GemminiConfig, GemminiOptions

if TYPE_CHECKING:
    from autocomp_core import MeasuredProgram

KNOWLEDGE_DIR = toolchain.PACKAGE_DIR / "knowledge"
#: families whose gold results, harnesses and store path are int8 only
INT8_ONLY = ("gemm", "conv")


class GemminiBackend(Backend[GemminiConfig, GemminiOptions]):
    name: ClassVar[str] = "gemmini"
    description: ClassVar[str] = (
        "Gemmini systolic-array accelerator: C against gemmini.h, built for bare-metal "
        "RISC-V and run on Spike with our Gemmini functional + timing model"
    )
    file_extension: ClassVar[str] = ".c"
    language: ClassVar[str] = "c"
    metric_unit: ClassVar[str] = "cycles"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.HW_FEEDBACK})

    def problems(self) -> list[Problem]:
        return [catalog.to_problem(spec) for spec in catalog.specs().values()]

    def load_problem(self, ref: str) -> Problem:
        """A problem by id, or by a prefix naming exactly one problem (`gemm-64`)."""
        specs = catalog.specs()
        matches = [ref] if ref in specs else [pid for pid in specs if pid.startswith(ref)]
        if len(matches) == 1:
            problem = catalog.to_problem(specs[matches[0]])
            self.hardware_for(problem)  # an unsupported dtype is bad input, refused here
            return problem
        known = ", ".join(specs)
        hint = f"ambiguous, matches {', '.join(matches)}" if matches else f"known: {known}"
        raise KeyError(f"unknown problem {ref!r} for backend 'gemmini' ({hint})")

    def _spec(self, problem: Problem) -> catalog.Spec:
        spec = catalog.specs().get(problem.id) or catalog.spec_of(problem)
        if spec is None:
            raise KeyError(f"unknown Gemmini problem {problem.id!r}")
        return spec

    def hardware_for(self, problem: Problem) -> GemminiConfig:
        """The config a problem runs on: the run's, with the fields the problem requires (ADMM: fp32,
        DIM 4). ValueError for a combination without gold results (fp32 GEMM or convolution) or a
        GEMM whose sizes DIM does not divide."""
        spec = self._spec(problem)
        if spec.family in INT8_ONLY and self.hardware.dtype != "int8":
            raise ValueError(
                f"{problem.id} is an int8 problem: hardware.dtype = {self.hardware.dtype!r} is "
                f"supported only by {', '.join(i for i, s in catalog.specs().items() if s.requires)}"
            )
        hw = (
            GemminiConfig(**{**self.hardware.model_dump(), **spec.requires})
            if spec.requires
            else self.hardware
        )
        if spec.family == "gemm":
            # the baseline (and every tiling the prompt allows) covers whole DIM x DIM tiles only
            for macro in ("GEMM_M", "GEMM_N", "GEMM_K"):
                if spec.params[macro.lower()] % hw.pe_dim:
                    raise ValueError(
                        f"{problem.id}: {macro}={spec.params[macro.lower()]} is not a multiple of "
                        f"hardware.pe_dim = {hw.pe_dim}"
                    )
        return hw

    def knowledge(self, problem: Problem) -> KnowledgePack:
        family = problem.metadata.get("family", "gemm")
        pack = KnowledgePack.from_dir(KNOWLEDGE_DIR)
        if family == "admm":
            finegrained = KnowledgePack.from_dir(KNOWLEDGE_DIR / "finegrained")
            pack.menu = finegrained.menu
            pack.isa = pack.isa + "\n\n" + finegrained.isa
            pack.rules_planning = pack.rules_planning + finegrained.rules_planning
        return pack

    def rules(self, problem: Problem) -> list[str]:
        hw = self.hardware_for(problem)
        elem = (
            "int8 (elem_t) with int32 (acc_t) accumulators"
            if hw.dtype == "int8"
            else "fp32 (elem_t and acc_t)"
        )
        return [
            f"The systolic array is {hw.pe_dim}x{hw.pe_dim} (DIM={hw.pe_dim}); data types are {elem}.",
            (
                f"The scratchpad holds {hw.spad_kb} KB: {hw.spad_rows} rows of DIM elements in {hw.spad_banks} "
                f"banks (addresses 0..{hw.spad_rows - 1})."
            ),
            (
                f"The accumulator holds {hw.acc_kb} KB: {hw.acc_rows} rows of DIM acc_t (local addresses with bit "
                f"31 set; rows 0..{hw.acc_rows - 1})."
            ),
            (
                f"One mvin moves at most DIM={hw.pe_dim} rows and {hw.max_block_len * hw.pe_dim} columns into the "
                f"scratchpad ({hw.max_block_len_acc * hw.pe_dim} into the accumulator)."
            ),
        ]

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        spec = self._spec(problem)
        hw = self.hardware_for(problem)
        opts = self.options
        # inputs drawn for this program: no candidate can carry the answer for them
        (seed,) = evaluation_seeds(ctx.seed, problem.id, code, 1)
        if opts.mode == "external":
            assert opts.external_command is not None  # GemminiOptions checks it
            result = await evaluate.evaluate_external(
                spec, code, hw, seed, ctx.timeout_s, opts.memory_mb, opts.external_command
            )
        else:
            timing_toml = opts.timing_toml.read_text() if opts.timing_toml else None
            result = await evaluate.evaluate_model(
                spec, code, hw, seed, ctx.timeout_s, opts.memory_mb, ctx.want_feedback, timing_toml
            )
        # the evaluation's own records (the model limits that applied) beside what it rests on
        result.verification = {
            **evaluate.verification(spec, seed, opts.mode),
            **result.verification,
        }
        return result

    def held_out_problem(self, problem: Problem) -> Problem | None:
        """The problem at its family's held-out shape (family.py states the rule), or None
        (ADMM: the same shapes, other seeds)."""
        spec = family.held_out_spec(self._spec(problem))
        return None if spec is None else catalog.to_problem(spec)

    def metric_lower_bound(self, problem: Problem) -> float | None:
        return feedback.lower_bound(self._spec(problem), self.hardware_for(problem))

    def resources(self) -> Resources:
        # one Spike process; the memory limit is a cap, a simulation mostly uses far less
        return Resources(cpus=1, memory_mb=1024)

    def doctor(self) -> list[DoctorCheck]:
        return toolchain.doctor()

    def fidelity_programs(self, source: Path) -> list[MeasuredProgram]:
        """The original system's published GEMM and convolution programs (fidelity.py)."""
        from . import fidelity

        return fidelity.measured_programs(source)
