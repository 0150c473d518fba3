"""Gemmini evaluation speed, before and after, side by side: per shipped program, the
simulation time and the RoCC commands simulated per second of the model at a git revision
("before", default: the model before issue 18's work) and of this checkout ("after"), run
alternately in one process, and their ratio. Both must give the same cycles.

    python benchmarks/gemmini_eval.py [--only gemm] [--before REV] [--seed 1]

"Before" builds each program with this checkout's evaluator and runs it on Spike with the
spike_ext.py and model of REV (extracted with `git archive`). AUTOCOMP_GEMMINI_MODEL=python
makes "after" the Python model instead of the compiled one.
Targets (issue 18, 2 cores): >= 40,000 RoCC commands per second on the GEMM and conv
baselines (those of 10,000 commands or more: below that Spike's start-up dominates), and every
program evaluates in <= 5 s. On a shared machine the seconds swing with the load; the ratio,
measured on the same program moments apart, is the steadier number (--repeat N keeps the
fastest of N runs of each).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from autocomp_gemmini import toolchain
from autocomp_gemmini.backend import GemminiBackend

from autocomp_core import EvalContext, EvalResult

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "plugins/autocomp_gemmini/autocomp_gemmini"
HAND = ROOT / "plugins" / "autocomp_gemmini" / "tests" / "candidates" / "gemm_hand_optimized.c"
BEFORE = "0ac29e4"  # main before issue 18 (the Gemmini model 4x faster)
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


async def run(backend: GemminiBackend, problem, code: str, seed: int) -> tuple[EvalResult, float]:
    ctx = EvalContext(seed=seed, timeout_s=600)
    start = time.perf_counter()
    result = await backend.evaluate(problem, code, ctx)
    return result, time.perf_counter() - start


def modelled(result: EvalResult) -> dict[str, float]:
    """Everything the model reports (cycles, statistics), without the wall-clock timings."""
    return {k: v for k, v in result.extra.items() if not k.endswith("_s")}


def fastest(runs: list[tuple[EvalResult, float]]) -> tuple[EvalResult, float]:
    return min(runs, key=lambda run: run[0].extra.get("sim_s", float("inf")))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run problems whose id starts with this")
    parser.add_argument(
        "--before", default=BEFORE, help=f"git revision of the 'before' model (default {BEFORE})"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each program and model (the fastest counts)"
    )
    args = parser.parse_args()
    backend = GemminiBackend()
    header = (
        f"{'problem':26} {'version':8} {'cycles':>9} {'RoCC cmds':>9} | {'before s':>8} {'cmds/s':>7} | "
        f"{'after s':>7} {'cmds/s':>7} {'total s':>7} | {'ratio':>5}"
    )
    print(
        f"simulation seconds and RoCC commands per second, before = {args.before}, after = this checkout\n"
    )
    print(header)
    print("-" * len(header))
    ratios, rates, totals, failures = [], [], [], []
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
                with model_at(args.before):
                    befores.append(await run(backend, problem, code, args.seed))
                afters.append(await run(backend, problem, code, args.seed))
            (before, _), (after, total) = fastest(befores), fastest(afters)
            cmds = after.extra.get("rocc_commands", 0.0)
            sim_before, sim_after = (
                before.extra.get("sim_s", float("nan")),
                after.extra.get("sim_s", float("nan")),
            )
            same = before.correct and after.correct and modelled(before) == modelled(after)
            ratio = sim_before / sim_after
            print(
                f"{problem.id:26} {name:8} {after.metric or 0:>9.0f} {cmds:>9.0f} | {sim_before:>8.2f} "
                f"{cmds / sim_before:>7.0f} | {sim_after:>7.2f} {cmds / sim_after:>7.0f} {total:>7.2f} | "
                f"{ratio:>5.1f}{'' if same else '  DIFFERENT RESULTS'}",
                flush=True,
            )
            if not same:
                failures.append(
                    f"{problem.id}/{name}: before {before.metric} {before.feedback[:200]}; "
                    f"after {after.metric} {after.feedback[:200]}"
                )
            ratios.append(ratio)
            totals.append((total, f"{problem.id}/{name}"))
            if (
                name == "baseline"
                and problem.id.startswith(("gemm-", "conv-"))
                and cmds >= RATE_MIN_COMMANDS
            ):
                rates.append((cmds / sim_after, problem.id))
    if not ratios:
        return
    slowest = max(totals)
    print(
        f"\nafter / before: median {statistics.median(ratios):.1f}x faster, least {min(ratios):.1f}x"
    )
    if rates:
        rate = min(rates)
        print(
            f"slowest GEMM/conv baseline of >= {RATE_MIN_COMMANDS:,} commands: {rate[0]:,.0f} RoCC commands/s "
            f"({rate[1]}; target >= {TARGET_RATE:,}): "
            f"{'met' if rate[0] >= TARGET_RATE else 'NOT met'}"
        )
    print(
        f"slowest evaluation: {slowest[0]:.2f} s ({slowest[1]}; target <= {TARGET_S:.0f} s): "
        f"{'met' if slowest[0] <= TARGET_S else 'NOT met'}"
    )
    for failure in failures:
        print("DIFFERENT:", failure)


if __name__ == "__main__":
    asyncio.run(main())
