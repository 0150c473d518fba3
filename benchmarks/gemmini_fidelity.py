"""The Gemmini model on the original system's published programs, as ratios per shape (issue 31):
per GEMM and convolution shape, the modelled cycles of the library, the unoptimized Exo program
and the hand-tuned Exo schedule (and their share of the array's peak), then the model's ratios
next to the paper's (geometric means over the shapes: the paper publishes no per-shape numbers).
`autocomp-core fidelity gemmini --source PATH` gives the per-program table and the rank
statistics; this adds the unoptimized convolutions (for which the paper gives no ratio) and the
ratio view.

    python benchmarks/gemmini_fidelity.py --source PATH/TO/autocomp-checkout [--jobs 2]
"""

from __future__ import annotations

import argparse
import asyncio
import math
from pathlib import Path

from autocomp_gemmini import fidelity
from autocomp_gemmini.backend import GemminiBackend

from autocomp_core import EvalContext

PAIRS = (("library", "unoptimized"), ("library", "hand-tuned"), ("unoptimized", "hand-tuned"))


def paper_ratio(family: str, slow: str, fast: str) -> float | None:
    """Time of `slow` over time of `fast`, from the paper's speed-ups of Autocomp over each."""
    s = fidelity.PAPER_SPEEDUP[family]
    return s[slow] / s[fast] if slow in s and fast in s else None


async def evaluate_all(programs: list[fidelity.Published], jobs: int) -> dict:
    backend = GemminiBackend()
    gate = asyncio.Semaphore(jobs)

    async def one(p: fidelity.Published):
        async with gate:
            result = await backend.evaluate(p.problem, p.code, EvalContext(seed=1, timeout_s=600))
        if not result.correct:
            return (p.problem.id, p.kind), f"refused: {result.feedback.splitlines()[0][:100]}"
        return (p.problem.id, p.kind), result.metric

    return dict(await asyncio.gather(*(one(p) for p in programs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    programs = fidelity.published_programs(args.source)
    cycles = asyncio.run(evaluate_all(programs, args.jobs))
    problems = {p.problem.id: p.problem for p in programs}
    print(f"{'shape':<12} {'kind':<12} {'cycles':>10} {'of peak':>8}")
    for pid, problem in problems.items():
        peak = problem.metadata["macs"] / 256  # a 16x16 array: 256 MACs a cycle
        for kind in fidelity.KINDS:
            c = cycles.get((pid, kind))
            if isinstance(c, float):
                print(f"{pid:<12} {kind:<12} {c:>10.0f} {peak / c:>7.0%}")
            elif c is not None:
                print(f"{pid:<12} {kind:<12} {c}")
    print(f"\n{'shape':<12} " + " ".join(f"{a + '/' + b:>24}" for a, b in PAIRS))
    for family in ("gemm", "conv"):
        logs: dict[tuple[str, str], list[float]] = {pair: [] for pair in PAIRS}
        for pid in (p for p in problems if p.startswith(f"exo-{family}-")):
            cells = []
            for slow, fast in PAIRS:
                a, b = cycles.get((pid, slow)), cycles.get((pid, fast))
                if isinstance(a, float) and isinstance(b, float):
                    logs[slow, fast].append(math.log(a / b))
                    cells.append(f"{a / b:>24.2f}")
                else:
                    cells.append(f"{'-':>24}")
            print(f"{pid:<12} " + " ".join(cells))
        geo = [
            f"{math.exp(sum(v) / len(v)):.2f}" if v else "-" for v in (logs[pair] for pair in PAIRS)
        ]
        paper = [paper_ratio(family, *pair) for pair in PAIRS]
        print(f"{family + ' geomean':<12} " + " ".join(f"{g:>24}" for g in geo))
        print(
            f"{family + ' paper':<12} "
            + " ".join(f"{(f'{r:.2f}' if r else 'not given'):>24}" for r in paper)
        )


if __name__ == "__main__":
    main()
