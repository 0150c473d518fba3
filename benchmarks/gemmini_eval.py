"""Gemmini evaluation speed: per problem, build time, simulation time, and RoCC commands
simulated per second, for the baseline and the vendor-library version (and the
hand-optimized GEMM candidate from the tests on the GEMM suite).

    python benchmarks/gemmini_eval.py [--only gemm] [--seed 1]

Target (issue 4): every GEMM-suite problem evaluates in at most 5 s on a 2-core machine.
"""
from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from autocomp_gemmini.backend import GemminiBackend

from autocomp_core.backend import EvalContext

HAND = Path(__file__).parents[1] / "plugins" / "autocomp_gemmini" / "tests" / "candidates" / "gemm_hand_optimized.c"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run problems whose id starts with this")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    backend = GemminiBackend()
    rows = []
    header = (f"{'problem':30} {'version':9} {'ok':3} {'cycles':>10} {'%peak':>6} {'build s':>8} {'sim s':>7} "
              f"{'total s':>8} {'RoCC cmds':>10} {'cmds/s':>9} {'model ops/s':>11}")
    print(header)
    print("-" * len(header))
    for problem in backend.problems():
        if not problem.id.startswith(args.only):
            continue
        versions = {"baseline": problem.baseline_code, "vendor": Path(problem.metadata["vendor_path"]).read_text()}
        if problem.id.startswith("gemm-"):
            versions["hand-opt"] = HAND.read_text()
        for name, code in versions.items():
            ctx = EvalContext(seed=args.seed, timeout_s=300)
            start = time.perf_counter()
            r = await backend.evaluate(problem, code, ctx)
            total = time.perf_counter() - start
            e = r.extra
            sim = e.get("sim_s", float("nan"))
            cmds = e.get("rocc_commands", 0.0)
            ops = e.get("modelled_ops", 0.0)
            rows.append((problem.id, name, total))
            print(f"{problem.id:30} {name:9} {'yes' if r.correct else 'NO':3} {r.metric or 0:>10.0f} "
                  f"{e.get('pct_of_peak', 0):>6.1f} {e.get('build_s', 0):>8.2f} {sim:>7.2f} {total:>8.2f} "
                  f"{cmds:>10.0f} {cmds / sim if sim else 0:>9.0f} {ops / sim if sim else 0:>11.0f}", flush=True)
            if not r.correct:
                print("   ", r.failure, r.feedback[:300])
    gemm = [t for pid, _, t in rows if pid.startswith("gemm-")]
    if gemm:
        slowest = max(gemm)
        print(f"\nGEMM suite: slowest evaluation {slowest:.2f} s (target <= 5 s on 2 cores): "
              f"{'met' if slowest <= 5 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
