"""Evaluation time of two checkouts side by side: what a change to a backend's checks costs.

Each evaluation runs in a fresh process importing one checkout's code; the two checkouts
alternate problem by problem and round by round, so a busy machine slows both alike. Per
problem and program it prints the median wall time of an evaluation before and after, and
their ratio (goal for the validity checks: at most 1.5).

    mkdir -p build/before && git archive main | tar -x -C build/before   # the checkout to compare against
    python benchmarks/eval_overhead.py --before build/before --backend rvv [--rounds 2] [--only gemm]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

AFTER = Path(__file__).resolve().parent.parent

#: per backend: the class, and the programs timed for a problem (a label and how to find its source)
CHILD = """
import asyncio, json, sys, time
from pathlib import Path
try:
    from autocomp_core.contract.backend import EvalContext
except ImportError:  # (a checkout from before the core's layout of today)
    from autocomp_core.backend import EvalContext
module, cls, problem_id, source, warm = sys.argv[1:6]
backend = getattr(__import__(module, fromlist=[cls]), cls)()
problem = backend.load_problem(problem_id)
code = Path(source).read_text()

async def main():
    if warm == "1":  # builds what the backend caches per problem (harness objects)
        await backend.evaluate(problem, code, EvalContext(seed=1))
    start = time.perf_counter()
    result = await backend.evaluate(problem, code, EvalContext(seed=1))
    print(json.dumps({"s": time.perf_counter() - start, "ok": result.correct, "metric": result.metric,
                      "why": result.feedback.splitlines()[0] if result.feedback and not result.correct else ""}))

asyncio.run(main())
"""


def programs(backend: str, tree: Path, problem_id: str) -> dict[str, Path]:
    if backend == "rvv":
        folder = (
            tree / "plugins" / "autocomp_rvv" / "autocomp_rvv" / "data" / "problems" / problem_id
        )
        return {
            "baseline": folder / "baseline.c",
            "vector": tree
            / "plugins"
            / "autocomp_rvv"
            / "tests"
            / "candidates"
            / f"{problem_id}_rvv.c",
        }
    family = problem_id.split("-")[0]
    folder = tree / "plugins" / "autocomp_gemmini" / "autocomp_gemmini" / "problems" / family
    return {"baseline": folder / "baseline.c", "vendor": folder / "vendor.c"}


def environment(tree: Path) -> dict[str, str]:
    paths = [str(tree), *(str(p) for p in sorted((tree / "plugins").iterdir()) if p.is_dir())]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def timed(tree: Path, backend: str, problem_id: str, source: Path) -> dict:
    module, cls = {
        "rvv": ("autocomp_rvv.backend", "RvvBackend"),
        "gemmini": ("autocomp_gemmini.backend", "GemminiBackend"),
    }[backend]
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                CHILD,
                module,
                cls,
                problem_id,
                str(source),
                "1" if backend == "rvv" else "0",
            ],
            capture_output=True,
            text=True,
            env=environment(tree),
            cwd=scratch,
        )
    if out.returncode:
        raise SystemExit(f"{tree}: {problem_id}: {out.stderr.strip()[-800:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def problem_ids(backend: str, tree: Path = AFTER) -> list[str]:
    if backend == "rvv":
        root = tree / "plugins" / "autocomp_rvv" / "autocomp_rvv" / "data" / "problems"
        return sorted(p.name for p in root.iterdir() if (p / "problem.toml").is_file())
    import tomllib

    root = tree / "plugins" / "autocomp_gemmini" / "autocomp_gemmini" / "problems"
    return [
        entry["id"]
        for family in ("gemm", "conv", "admm")
        for entry in tomllib.loads((root / family / "problems.toml").read_text())["problem"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", type=Path, required=True, help="the checkout to compare against"
    )
    parser.add_argument("--backend", choices=["rvv", "gemmini"], default="rvv")
    parser.add_argument(
        "--rounds", type=int, default=2, help="timed evaluations per checkout and program"
    )
    parser.add_argument("--only", default="", help="problems whose id starts with this")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": AFTER}
    print(
        f"{args.backend}: median seconds per evaluation over {args.rounds} rounds, before = {trees['before']}\n"
    )
    header = f"{'problem':<28} {'program':<9} {'before s':>9} {'after s':>9} {'ratio':>6}  metric before/after"
    print(header)
    print("-" * len(header))
    ratios = []
    known_before = set(problem_ids(args.backend, trees["before"]))
    for problem_id in problem_ids(args.backend):
        if not problem_id.startswith(args.only):
            continue
        if problem_id not in known_before:
            print(f"{problem_id:<28} (not a problem of the checkout before: left out)")
            continue
        for label in programs(args.backend, AFTER, problem_id):
            runs: dict[str, list[dict]] = {"before": [], "after": []}
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    runs[name].append(
                        timed(
                            tree,
                            args.backend,
                            problem_id,
                            programs(args.backend, tree, problem_id)[label],
                        )
                    )
            before, after = (
                statistics.median(r["s"] for r in runs[n]) for n in ("before", "after")
            )
            ratios.append(after / before)
            metrics = "/".join(
                str(r[0]["metric"]) if r[0]["ok"] else f"FAILED ({r[0]['why'][:60]})"
                for r in (runs["before"], runs["after"])
            )
            print(
                f"{problem_id:<28} {label:<9} {before:>9.2f} {after:>9.2f} {after / before:>6.2f}  {metrics}",
                flush=True,
            )
    if ratios:
        print(
            f"\nafter/before: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f} "
            f"(goal: at most 1.5)"
        )


if __name__ == "__main__":
    main()
