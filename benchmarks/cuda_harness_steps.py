"""How far the harness's own steps around each timed call (drawing the inputs, the cache flush,
keeping the output) differ between an honest candidate's worker and the baseline's worker on
the CPU device: the margin ``lockstep.SKIPPED_SHARE`` must leave.

Every honest CPU fixture of the adversarial suite, and each problem's own eager program as the
candidate, is evaluated RUNS times; per step the ratio of the two workers' medians (candidate
over baseline) is printed, then the lowest and highest ratio seen per step. Run it under the
load the harness will meet (other evaluations beside it).

    python benchmarks/cuda_harness_steps.py [--runs 3] [--eager-only]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from autocomp_cuda.adversarial import HONEST, header, settings_of
from autocomp_cuda.harness import Harness, Settings
from autocomp_cuda.problemset import suite

#: the eager programs evaluated against themselves (small and large calls, several input counts)
EAGER = ("L1/relu", "L1/matmul_square", "L2/linear_scale_residual")


def _cases(eager_only: bool) -> list[tuple[str, str, dict, bool]]:
    """(label, problem, settings, static rules on) per candidate."""
    specs = {s.id: s for s in suite()}
    cases = [(f"eager {p}", p, {}, False) for p in EAGER]
    if not eager_only:
        for path in HONEST:
            meta = header(path)
            if meta.get("gpu") == "true" or meta["problem"].startswith("kb/"):
                continue
            cases.append((path.stem, meta["problem"], settings_of(path), True))
    return [(label, p, s, static) for label, p, s, static in cases if p in specs]


async def main(runs: int, eager_only: bool) -> int:
    specs = {s.id: s for s in suite()}
    lowest: dict[str, float] = {}
    highest: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="cuda-steps-") as tmp:
        for label, problem, options, static in _cases(eager_only):
            spec = specs[problem]
            code = spec.source if label.startswith("eager") else _source(label)
            harness = Harness(Path(tmp), Settings(device="cpu", static_checks=static, **options))
            try:
                for run in range(runs):
                    verdict = await harness.evaluate(spec, code, seed=2000 + run)
                    steps = verdict.info.get("harness_steps_ms") or {}
                    ratios = {s: c / b for s, (c, b) in steps.items() if b > 0}
                    for step, ratio in ratios.items():
                        lowest[step] = min(lowest.get(step, ratio), ratio)
                        highest[step] = max(highest.get(step, ratio), ratio)
                    shown = ", ".join(
                        f"{s} {c:.3f}/{b:.3f} ms ({c / b:.2f})" for s, (c, b) in steps.items()
                    )
                    print(f"{label} run {run + 1}: {verdict.status}; {shown}", flush=True)
            finally:
                await harness.aclose()
    for step in lowest:
        print(f"{step}: candidate/baseline from {lowest[step]:.2f} to {highest[step]:.2f}")
    return 0


def _source(stem: str) -> str:
    (path,) = [p for p in HONEST if p.stem == stem]
    return path.read_text()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eager-only", action="store_true")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.runs, args.eager_only)))
