"""Time the rvv backend's evaluation per problem: build, qemu checks and Spike, side by side.

For every problem it evaluates the scalar baseline and the vectorized reference candidate
(plugins/autocomp_rvv/tests/candidates/<problem>_rvv.c) and prints, per evaluation, the time
spent compiling and linking, running the qemu-user checks (all check VLENs at once), and
running Spike with its log plus the cycle model, next to the target of 2 s per candidate.
The first evaluation of a problem also compiles its harness (cached afterwards): it is
shown as "cold"; later ones as "warm".

    python benchmarks/rvv_eval.py [--core saturn|k230] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from autocomp_rvv.backend import RvvBackend

from autocomp_core.contract.backend import EvalContext

CANDIDATES = (
    Path(__file__).resolve().parent.parent / "plugins" / "autocomp_rvv" / "tests" / "candidates"
)
TARGET_S = 2.0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--core", default="saturn", choices=["saturn", "k230"])
    parser.add_argument("--repeat", type=int, default=2, help="warm evaluations of each candidate")
    args = parser.parse_args()
    backend = RvvBackend(hardware={"core": args.core})
    ctx = EvalContext()
    print(
        f"rvv evaluation time on {os.cpu_count()} CPUs, core={args.core}, check VLENs "
        f"{backend.hardware.all_check_vlens}, target {TARGET_S:.1f} s per candidate\n"
    )
    header = (
        f"{'problem':<20} {'program':<9} {'run':<5} {'build s':>8} {'qemu s':>7} {'spike s':>8} "
        f"{'total s':>8} {'instr':>7} {'cycles':>8} {'speedup':>8}"
    )
    print(header)
    print("-" * len(header))
    warm_totals = []
    for problem in backend.problems():
        base_cycles = None
        for label, code in (
            ("baseline", problem.baseline_code),
            ("vector", (CANDIDATES / f"{problem.id}_rvv.c").read_text()),
        ):
            for _ in range(1 + args.repeat if label == "vector" else 1):
                started = time.perf_counter()
                result = await backend.evaluate(problem, code, ctx)
                total = time.perf_counter() - started
                if not result.correct:
                    print(f"{problem.id:<20} {label:<9} FAILED: {result.feedback.splitlines()[0]}")
                    break
                cold = label == "baseline"
                if not cold:
                    warm_totals.append(total)
                if label == "baseline":
                    base_cycles = result.metric
                speedup = f"{base_cycles / result.metric:.1f}x" if base_cycles else ""
                x = result.extra
                print(
                    f"{problem.id:<20} {label:<9} {'cold' if cold else 'warm':<5} {x['build_s']:>8.2f} "
                    f"{x['qemu_s']:>7.2f} {x['spike_s']:>8.2f} {total:>8.2f} {int(x['instructions']):>7} "
                    f"{int(result.metric):>8} {speedup:>8}"
                )
    if warm_totals:
        median, worst = statistics.median(warm_totals), max(warm_totals)
        print(
            f"\nwarm candidate evaluations: {len(warm_totals)}, median {median:.2f} s "
            f"({median / TARGET_S:.2f} of the {TARGET_S:.0f} s target), worst {worst:.2f} s "
            f"({worst / TARGET_S:.2f} of the target)"
        )


if __name__ == "__main__":
    asyncio.run(main())
