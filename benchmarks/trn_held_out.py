"""autocomp-trn: what the held-out check costs, per problem, in evaluation wall time.

For every problem with a held-out shape (``TrnBackend.held_out_problem``), one real evaluation
(sandboxed trace and replay, the backend's default 3 seeds, emulator mode on trn2) of its
baseline at the searched shape and one at the held-out shape, alternated ``--repeat`` times;
prints the fastest of each and their ratio, then the median and the worst ratio. The engine
runs the held-out check about once per iteration (the iteration's best, and the run's reported
best), so the ratio is the check's extra cost in evaluations of the searched shape.
A PyTorch-source problem's baseline runs in PyTorch, not the emulator: those are skipped.

    python benchmarks/trn_held_out.py [--repeat N] [--only PROBLEM ...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from autocomp_trn.backend import TrnBackend

from autocomp_core import EvalContext


async def run(repeat: int, only: list[str]) -> None:
    backend = TrnBackend({"mode": "emulator", "generation": "trn2"}, {})
    print(f"{'problem':30s} {'searched s':>10s} {'held-out s':>10s} {'ratio':>6s}  held-out shape")
    ratios = []
    for problem in backend.problems():
        held = backend.held_out_problem(problem)
        if held is None or problem.metadata["language"] != "nki":
            continue
        if only and problem.id not in only:
            continue
        code = problem.baseline_code
        times: dict[str, list[float]] = {problem.id: [], held.id: []}
        for r in range(repeat):
            for which in (problem, held):
                started = time.perf_counter()
                result = await backend.evaluate(which, code, EvalContext(seed=r))
                times[which.id].append(time.perf_counter() - started)
                if not result.correct:
                    raise SystemExit(f"{which.id}: the baseline failed: {result.feedback}")
        searched, held_out = min(times[problem.id]), min(times[held.id])
        ratios.append(held_out / searched)
        shape = held.context.split("Shapes: ", 1)[1].split("; outputs", 1)[0]
        print(f"{problem.id:30s} {searched:10.2f} {held_out:10.2f} {ratios[-1]:6.2f}  {shape}")
    if ratios:
        print(
            f"held-out / searched: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    asyncio.run(run(args.repeat, args.only))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
