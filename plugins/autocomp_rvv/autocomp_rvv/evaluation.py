"""One program's evaluation, step by step (the backend's evaluate() runs them in this order):

1. build: the kernel compiled and linked (build.py), its source and object screened;
2. qemu: every correctness case run at every check VLEN under qemu-user (checks.py);
3. spike: the exact instruction count of the kernel region on Spike (runner.py);
4. verify: every recorded output, and the timed run's, judged by the verifier (timed.py);
5. model: the modelled cycles (costmodel.py) and the model limits that apply;
6. board: in board mode, the cycles measured on a real board (board.py).

Each step that takes time is timed into `extra` (`<step>_s`, recorded when the step completes)
and each adds the checks it passed to `verification["checks"]`, so a failed evaluation reports
what had passed before it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from autocomp_core import EvalContext, EvaluationRecord

from . import board as board_mode, model_limits
from .build import Builder, Built
from .checks import check_at_vlen, reference_syscalls
from .config import RvvHardware
from .costmodel import CoreParams, model_cycles
from .problems import ProblemSpec
from .runner import SpikeRun, spike_count
from .timed import outputs_image, parse_layout, verify_outputs


class Evaluation:
    """The steps of one evaluation and their record: `extra` (seconds and numbers) and
    `verification` (seeds, shapes, the checks passed, the model limits that apply)."""

    def __init__(
        self,
        builder: Builder,
        hw: RvvHardware,
        params: CoreParams,
        spec: ProblemSpec,
        ctx: EvalContext,
        seeds: tuple[int, int],
        syscalls: dict[str, list[str]],
    ) -> None:
        self.builder, self.tools = builder, builder.tools
        self.hw, self.params, self.spec, self.ctx = hw, params, spec, ctx
        # inputs no candidate can know in advance: the correctness cases use check_seed + i
        self.check_seed, self.timed_seed = seeds
        self.syscalls = syscalls  # per problem: the reference runner's calls (the backend's cache)
        self.record = EvaluationRecord(
            seeds={"checks": self.check_seed, "timed": self.timed_seed},
            shapes={"checks": list(spec.case_shapes), "timed": spec.bench_shape},
        )

    async def run(self, code: str, workdir: Path) -> tuple[float, str]:
        """Every step in order: (the metric, the feedback). A step's failure raises
        BuildFailure, RunFailure or board.BoardError."""
        built = await self.build(code, workdir)
        runs = await self.qemu_checks(built)
        timed_run = await self.spike_run(built)
        await self.verify(built, runs, timed_run)
        metric, feedback = self.model(timed_run)
        if self.hw.board is not None:
            metric, feedback = await self.board(built, feedback)
        return metric, feedback

    async def build(self, code: str, workdir: Path) -> Built:
        with self.record.timed("build"):
            built = await self.builder.build(
                self.spec,
                code,
                workdir,
                self.hw.autovectorize,
                self.timed_seed,
                board=self.hw.board is not None,
            )
        self.record.passed(
            "source: no counters, CSRs, host interface, inline assembly or constructors",
            "object: the kernel its only global symbol; only memcpy/memset/memmove "
            "undefined; code only in executable .text sections holding instructions; no "
            "system calls, counter or CSR access, or init sections in the machine code",
        )
        return built

    async def qemu_checks(self, built: Built) -> list[tuple[str, bytes]]:
        """The runner at every check VLEN at once: each VLEN's recorded outputs."""
        vlens, timeout_s = self.hw.all_check_vlens, self.ctx.timeout_s
        with self.record.timed("qemu"):
            expected = self.syscalls.get(self.spec.id)
            if expected is None:  # the baseline's runner, once per problem
                expected = await reference_syscalls(
                    self.tools.qemu, built.reference_runner, timeout_s
                )
                self.syscalls[self.spec.id] = expected
            outcomes = await asyncio.gather(
                *(
                    check_at_vlen(
                        self.tools.qemu, built.runner, vlen, self.check_seed, timeout_s, expected
                    )
                    for vlen in vlens
                ),
                return_exceptions=True,
            )
            runs: list[tuple[str, bytes]] = []
            for vlen, outcome in zip(vlens, outcomes):
                # report the smallest failing VLEN, whichever finished first
                if isinstance(outcome, BaseException):
                    raise outcome
                runs.append((f"VLEN={vlen}", outcome))
        self.record.passed(
            *(
                f"qemu-user VLEN={vlen}: every case run in a fresh dir, guard pages, read-only "
                "inputs, no system call but the harness's (qemu's log)"
                for vlen in vlens
            )
        )
        return runs

    async def spike_run(self, built: Built) -> SpikeRun:
        with self.record.timed("spike"):
            run = await spike_count(
                self.tools.spike, built.baremetal, self.hw.effective_vlen, self.ctx.timeout_s
            )
        self.record.passed("timed run (Spike): minstret equals the traced instruction count")
        return run

    async def verify(self, built: Built, runs: list[tuple[str, bytes]], run: SpikeRun) -> None:
        """The verifier judges the outputs of every check run and of the timed run."""
        with self.record.timed("verify"):
            image = outputs_image(run.insns, parse_layout(run.stdout))
            self.record.passed(
                "timed run (Spike): every store lands in an output or the kernel's stack"
            )
            await verify_outputs(
                self.tools.qemu,
                built.verifier,
                runs,
                self.check_seed,
                image,
                self.timed_seed,
                self.ctx.timeout_s,
            )
        self.record.passed(
            *(
                f"qemu-user VLEN={vlen}: every case's outputs match the reference on inputs "
                "set up again from the seed (judged without the candidate in the process)"
                for vlen in self.hw.all_check_vlens
            )
        )
        self.record.passed(
            "timed run (Spike): its outputs, rebuilt from the commit log, match the "
            "reference (checked without the candidate in the process)"
        )

    def model(self, run: SpikeRun) -> tuple[float, str]:
        """The modelled cycles and their feedback."""
        hw = self.hw
        report = model_cycles(run.insns, self.params)
        self.record.extra.update(
            instructions=float(run.instret),
            modelled_cycles=float(report.cycles),
            vector_instructions=float(report.vector_instructions),
            vlen=float(hw.effective_vlen),
            dlen=float(hw.effective_dlen),
        )
        feedback = f"{report.summary()}\nExact instruction count (Spike): {run.instret}."
        if hw.board is None:  # the metric is the model's: say where it is weakest
            limits = model_limits.applying(run.insns, report, self.params)
            self.record.verification["model_limits"] = limits
            if limits:
                feedback += "\n" + model_limits.section(limits)
        return float(report.cycles), feedback

    async def board(self, built: Built, feedback: str) -> tuple[float, str]:
        """The cycles measured on the board, which become the metric."""
        board = self.hw.board
        assert board is not None and built.board is not None
        with self.record.timed("board"):
            cycles, instret = await board_mode.run_on_board(board, built.board, self.timed_seed)
        self.record.extra.update(board_cycles=float(cycles), board_instret=float(instret))
        self.record.passed(f"board: each of the {board.reps} timed calls checked, on fresh inputs")
        measured = f"\nMeasured on the board {board.host}: {cycles} cycles, {instret} instructions."
        return float(cycles), feedback + measured
