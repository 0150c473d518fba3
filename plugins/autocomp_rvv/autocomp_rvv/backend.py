"""The ``rvv`` backend: RISC-V Vector 1.0 kernels in C with intrinsics.

evaluate() runs the steps of evaluation.py: build (clang-19) → the kernel run on every
correctness case under qemu-user at every check VLEN, its outputs recorded (checks.py) →
exact instruction count of the kernel region on Spike (timed.py) → every recorded output and
the timed run's judged by the trusted verifier → modelled cycles (costmodel.py), or cycles
measured on a real board over SSH when ``[hardware.board]`` is set. Inputs come from seeds
drawn for each program. Every stage that runs candidate code runs in a fresh directory of its
own; the verdict comes only from the verifier's process and the evaluator.
"""

from __future__ import annotations

import math

from autocomp_core import (
    Backend,
    BackendOptions,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    FailureKind,
    KnowledgePack,
    Problem,
    Resources,
    evaluation_seeds,
    private_workdir,
)

from . import board as board_mode
from .build import Builder, BuildFailure
from .config import RvvHardware
from .costmodel import CORE_PRESETS, CoreParams
from .evaluation import Evaluation
from .problems import DATA, all_problems, spec_for
from .runner import RunFailure
from .toolchain import Tools, doctor_checks

#: what one scalar instruction handles at most in a cycle: a 64-bit register, one 8-byte access
SCALAR_BITS_PER_CYCLE = 64
#: the custom resource a board is: its timings are only honest one program at a time
BOARD = "rvv_board"


class RvvBackend(Backend[RvvHardware, BackendOptions]):
    """Everything is in ``[hardware]``: the backend takes no options."""

    name = "rvv"
    description = "RISC-V Vector 1.0 (C intrinsics): qemu-user correctness, Spike instruction counts, modelled cycles"
    file_extension = ".c"
    language = "c"
    metric_unit = "cycles"
    capabilities = frozenset({Capability.HW_FEEDBACK})

    def __init__(self, hardware=None, options=None) -> None:
        super().__init__(hardware, options)
        self._builder: Builder | None = None
        self._syscalls: dict[str, list[str]] = {}  # per problem: the reference runner's calls

    # ------------------------------------------------------------------ problems and prompts
    def problems(self) -> list[Problem]:
        return all_problems()

    def knowledge(self, problem: Problem) -> KnowledgePack:
        return KnowledgePack.from_dir(DATA / "knowledge")

    def rules(self, problem: Problem) -> list[str]:
        hw = self.hardware
        vlens = ", ".join(str(v) for v in hw.all_check_vlens)
        return [
            (
                f"The target core has VLEN={hw.effective_vlen} and DLEN={hw.effective_dlen} bits; performance is "
                f"modelled cycles of a {hw.core}-like core."
            ),
            (
                f"The code must be vector-length agnostic: it is checked under VLEN = {vlens}. Take vl from "
                "vsetvl (or vsetvlmax) and never hard-code the number of elements per register."
            ),
        ]

    def params(self) -> CoreParams:
        return self.params_for(self.hardware)

    def metric_lower_bound(self, problem: Problem) -> float | None:
        """Roofline of the model, with the scalar core working beside the vector unit: every
        element op at full datapath width plus one 64-bit scalar instruction per cycle, every
        byte loaded (stored) at the vector load (store) pipe's full bandwidth plus one 8-byte
        scalar access per cycle (the scalar core reaches memory through its own port, as on
        Saturn's and the C908's cores; the model charges it 1 cycle, costmodel.py)."""
        spec = spec_for(problem)
        p = self.params()
        compute = spec.bench_ops * spec.elem_bits / (p.dlen + SCALAR_BITS_PER_CYCLE)
        memory = (
            max(spec.bench_load_bytes, spec.bench_store_bytes)
            * 8
            / (p.mem_bits + SCALAR_BITS_PER_CYCLE)
        )
        return float(math.ceil(max(compute, memory)))

    def resources(self) -> Resources:
        # each evaluation runs one qemu per check VLEN at once; a board times one at a time
        cpus = len(self.hardware.all_check_vlens)
        if self.hardware.board is not None:
            return Resources(cpus=cpus, memory_mb=1024, custom={BOARD: 1}, available={BOARD: 1})
        return Resources(cpus=cpus, memory_mb=1024)

    def doctor(self) -> list[DoctorCheck]:
        checks = doctor_checks()
        if self.hardware.board is not None:
            checks.append(board_mode.doctor_check(self.hardware.board))
        return checks

    # ------------------------------------------------------------------ evaluation
    def _get_builder(self) -> Builder:
        """The builder, and the tools it found, made on first use (a missing tool raises)."""
        if self._builder is None:
            self._builder = Builder(Tools.find())
        return self._builder

    def _tools(self) -> Tools:
        return self._get_builder().tools

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        """The steps of evaluation.py in order; a step's failure is the result."""
        spec = spec_for(problem)  # an unknown problem or a missing tool raises: the engine
        builder = self._get_builder()  # records that as the evaluator's failure (INFRA_ERROR)
        check_seed, timed_seed = evaluation_seeds(ctx.seed, problem.id, code, 2)
        steps = Evaluation(
            builder,
            self.hardware,
            self.params(),
            spec,
            ctx,
            (check_seed, timed_seed),
            self._syscalls,
        )
        with private_workdir("autocomp-rvv-") as workdir:
            workdir.chmod(0o777)
            try:
                metric, feedback = await steps.run(code, workdir)
            except (BuildFailure, RunFailure) as exc:
                return steps.record.result(
                    False,
                    failure=exc.kind,
                    feedback=exc.feedback,
                    stdout=getattr(exc, "stdout", ""),
                    stderr=exc.stderr,
                )
            except board_mode.BoardError as exc:
                return steps.record.result(
                    False, failure=FailureKind.INFRA_ERROR, feedback=str(exc)
                )
        return steps.record.result(
            True,
            metric=metric,
            unit=self.metric_unit,
            feedback=feedback if ctx.want_feedback else "",
        )

    def params_for(self, hw: RvvHardware) -> CoreParams:
        return CORE_PRESETS[hw.core].with_lengths(hw.effective_vlen, hw.effective_dlen)
