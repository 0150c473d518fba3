"""The ``rvv`` backend: RISC-V Vector 1.0 kernels in C with intrinsics.

evaluate(): build (clang-19) → the kernel run on every correctness case under qemu-user at
every check VLEN, its outputs recorded (checks.py) → exact instruction count of the kernel
region on Spike (timed.py) → every recorded output and the timed run's judged by the trusted
verifier → modelled cycles (costmodel.py), or cycles measured on a real board over SSH when
``[hardware.board]`` is set. Inputs come from seeds drawn for each program. Every stage that
runs candidate code runs in a fresh directory of its own; the verdict comes only from the
verifier's process and the evaluator.
"""

from __future__ import annotations

import asyncio
import math
import time

from autocomp_core import (
    Backend,
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

from . import board as board_mode, model_limits
from .build import Builder, BuildFailure
from .checks import check_at_vlen, reference_syscalls
from .config import RvvHardware
from .costmodel import CORE_PRESETS, CoreParams, model_cycles
from .problems import DATA, all_problems, spec_for
from .runner import RunFailure, spike_count
from .timed import outputs_image, parse_layout, verify_outputs
from .toolchain import Tools, doctor_checks

#: what one scalar instruction handles at most in a cycle: a 64-bit register, one 8-byte access
SCALAR_BITS_PER_CYCLE = 64
#: the custom resource a board is: its timings are only honest one program at a time
BOARD = "rvv_board"


class RvvBackend(Backend):
    name = "rvv"
    description = "RISC-V Vector 1.0 (C intrinsics): qemu-user correctness, Spike instruction counts, modelled cycles"
    file_extension = ".c"
    language = "c"
    metric_unit = "cycles"
    hardware_config_type = RvvHardware
    capabilities = frozenset({Capability.HW_FEEDBACK})

    hardware: RvvHardware  # everything is in [hardware]: the backend takes no options

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
    def _tools(self) -> Tools:
        if self._builder is None:
            self._builder = Builder(Tools.find())
        return self._builder.tools

    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        started = time.perf_counter()
        hw = self.hardware
        spec = spec_for(problem)  # an unknown problem or a missing tool raises: the engine
        tools = self._tools()  # records that as the evaluator's failure (INFRA_ERROR)
        # inputs no candidate can know in advance: the correctness cases use check_seed + i
        check_seed, timed_seed = evaluation_seeds(ctx.seed, problem.id, code, 2)
        checks: list[str] = []
        verification = {
            "seeds": {"checks": check_seed, "timed": timed_seed},
            "shapes": {"checks": list(spec.case_shapes), "timed": spec.bench_shape},
            "checks": checks,
        }
        extra: dict[str, float] = {}
        with private_workdir("autocomp-rvv-") as workdir:
            workdir.chmod(0o777)
            try:
                t = time.perf_counter()
                built = await self._builder.build(
                    spec, code, workdir, hw.autovectorize, timed_seed, board=hw.board is not None
                )
                extra["build_s"] = time.perf_counter() - t
                checks += [
                    "source: no counters, CSRs, host interface, inline assembly or constructors",
                    "object: the kernel its only global symbol; only memcpy/memset/memmove "
                    "undefined; code only in executable .text sections holding instructions; no "
                    "system calls, counter or CSR access, or init sections in the machine code",
                ]

                t = time.perf_counter()
                expected = self._syscalls.get(spec.id)
                if expected is None:  # the baseline's runner, once per problem
                    expected = await reference_syscalls(
                        tools.qemu, built.reference_runner, ctx.timeout_s
                    )
                    self._syscalls[spec.id] = expected
                outcomes = await asyncio.gather(
                    *(
                        check_at_vlen(
                            tools.qemu, built.runner, vlen, check_seed, ctx.timeout_s, expected
                        )
                        for vlen in hw.all_check_vlens
                    ),
                    return_exceptions=True,
                )
                runs: list[tuple[str, bytes]] = []
                for vlen, outcome in zip(hw.all_check_vlens, outcomes):
                    # report the smallest failing VLEN, whichever finished first
                    if isinstance(outcome, BaseException):
                        raise outcome
                    runs.append((f"VLEN={vlen}", outcome))
                extra["qemu_s"] = time.perf_counter() - t
                checks += [
                    f"qemu-user VLEN={vlen}: every case run in a fresh dir, guard pages, read-only "
                    "inputs, no system call but the harness's (qemu's log)"
                    for vlen in hw.all_check_vlens
                ]

                t = time.perf_counter()
                run = await spike_count(
                    tools.spike, built.baremetal, hw.effective_vlen, ctx.timeout_s
                )
                extra["spike_s"] = time.perf_counter() - t
                checks.append("timed run (Spike): minstret equals the traced instruction count")
                t = time.perf_counter()
                image = outputs_image(run.insns, parse_layout(run.stdout))
                checks.append(
                    "timed run (Spike): every store lands in an output or the kernel's stack"
                )
                await verify_outputs(
                    tools.qemu,
                    built.verifier,
                    runs,
                    check_seed,
                    image,
                    timed_seed,
                    ctx.timeout_s,
                )
                extra["verify_s"] = time.perf_counter() - t
                checks += [
                    f"qemu-user VLEN={vlen}: every case's outputs match the reference on inputs "
                    "set up again from the seed (judged without the candidate in the process)"
                    for vlen in hw.all_check_vlens
                ]
                checks.append(
                    "timed run (Spike): its outputs, rebuilt from the commit log, match the "
                    "reference (checked without the candidate in the process)"
                )
                report = model_cycles(run.insns, self.params_for(hw))
                extra.update(
                    instructions=float(run.instret),
                    modelled_cycles=float(report.cycles),
                    vector_instructions=float(report.vector_instructions),
                    vlen=float(hw.effective_vlen),
                    dlen=float(hw.effective_dlen),
                )
                metric = float(report.cycles)
                feedback = f"{report.summary()}\nExact instruction count (Spike): {run.instret}."
                if hw.board is None:  # the metric is the model's: say where it is weakest
                    limits = model_limits.applying(run.insns, report, self.params_for(hw))
                    verification["model_limits"] = limits
                    if limits:
                        feedback += "\n" + model_limits.section(limits)

                if hw.board is not None:
                    t = time.perf_counter()
                    assert built.board is not None
                    cycles, instret = await board_mode.run_on_board(
                        hw.board, built.board, timed_seed
                    )
                    extra["board_s"] = time.perf_counter() - t
                    extra.update(board_cycles=float(cycles), board_instret=float(instret))
                    checks.append(
                        f"board: each of the {hw.board.reps} timed calls checked, on fresh inputs"
                    )
                    metric = float(cycles)
                    feedback += f"\nMeasured on the board {hw.board.host}: {cycles} cycles, {instret} instructions."
            except (BuildFailure, RunFailure) as exc:
                return EvalResult(
                    correct=False,
                    failure=exc.kind,
                    feedback=exc.feedback,
                    stdout=getattr(exc, "stdout", ""),
                    stderr=exc.stderr,
                    extra=extra,
                    verification=verification,
                    duration_s=time.perf_counter() - started,
                )
            except board_mode.BoardError as exc:
                return EvalResult(
                    correct=False,
                    failure=FailureKind.INFRA_ERROR,
                    feedback=str(exc),
                    extra=extra,
                    verification=verification,
                    duration_s=time.perf_counter() - started,
                )
        return EvalResult(
            correct=True,
            metric=metric,
            unit=self.metric_unit,
            feedback=feedback if ctx.want_feedback else "",
            extra=extra,
            verification=verification,
            duration_s=time.perf_counter() - started,
        )

    def params_for(self, hw: RvvHardware) -> CoreParams:
        return CORE_PRESETS[hw.core].with_lengths(hw.effective_vlen, hw.effective_dlen)
