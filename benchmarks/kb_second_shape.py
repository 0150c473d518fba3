"""What checking a shrunk batch at a second shape costs: KernelBench-format problems whose
batch the CPU's budget shrinks, evaluated side by side in one run.

A batch shrunk to 1 comes with a second, untimed shape at batch 2 (a program that computes
only the first row is right at 1): a second reference and a second run of the candidate.
Each row evaluates one honest program ``--repeat`` times through ``CudaBackend.evaluate``,
each evaluation with a seed of its own (so a fresh reference), after the problem's gate
and one evaluation that starts the judge and the workers (neither timed), in a process and
a cache of its own; the rows take turns ``--rounds`` times,
so a machine whose load changes treats them alike:

  one shape, batch 1   the sizes shrinking chose, given as ``size_overrides``: no second shape
                       (what an evaluation cost before the second shape existed)
  shrunk (REV)         the plugin of git revision REV (``--before``), shrinking as it did
  shrunk (current)     this working tree's plugin, or revision ``--after``'s (the
                       one-shape rows run on the same one)

on ``kb/L1/55`` (a convolution whose image can shrink instead of the batch) and on
``kb/L3/19`` (only the batch is a size constant: shrunk to 1, checked at 2 too), both from
``autocomp_cuda/adversarial/kernelbench``; the honest programs are the adversarial suite's.

    python benchmarks/kb_second_shape.py [--before REV] [--after REV] [--repeat 5] [--rounds 1]
                                         [--reps 8] [--problem kb/L1/55]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADVERSARIAL = ROOT / "plugins" / "autocomp_cuda" / "autocomp_cuda" / "adversarial"
KERNELBENCH = ADVERSARIAL / "kernelbench"
#: (problem, its honest program, the sizes shrinking chose for it before the batch stayed at 2)
PROBLEMS = [
    (
        "kb/L1/55",
        "kb_conv_as_unfold_matmul.py",
        {"batch_size": 1, "in_channels": 8, "out_channels": 16, "height": 64, "width": 128},
    ),
    ("kb/L3/19", "kb_conv_image_by_image.py", {"batch_size": 1}),
]


async def evaluate_row(row: dict) -> dict:
    """In the row's own process: the gate, then ``repeat`` evaluations, each timed."""
    from autocomp_cuda.backend import CudaBackend

    from autocomp_core.contract.backend import EvalContext

    options = {
        "cache_dir": row["cache"],
        "kernelbench_path": str(KERNELBENCH),
        "reps": row["reps"],
        "warmup": 2,
    }
    if row["sizes"]:
        options["size_overrides"] = {row["problem"]: row["sizes"]}
    backend = CudaBackend(hardware={"device": "cpu"}, options=options)
    code = (ADVERSARIAL / "honest" / row["program"]).read_text()
    walls, parts, shapes = [], [], set()
    reference = backend.harness.reference

    async def counted(spec, seed, gate=False, sizes=None):  # which shapes got a reference
        found = await reference(spec, seed, gate, sizes)
        shapes.add(json.dumps(found[1].get("sizes"), sort_keys=True))
        return found

    async with backend:
        problem = backend.load_problem(row["problem"])
        report = await backend.check_problem(row["problem"])  # (its reference stays cached)
        assert report.passed, report.reasons
        # Not counted: the first evaluation in a process also starts the judge and the
        # workers' preload server.
        await backend.evaluate(problem, code, EvalContext(seed=-1 - row["round"]))
        backend.harness.reference = counted
        for k in range(row["repeat"]):
            started = time.perf_counter()
            result = await backend.evaluate(
                problem, code, EvalContext(seed=1000 * row["round"] + k)
            )
            walls.append(time.perf_counter() - started)
            assert result.correct, result.feedback
            parts.append([result.extra.get(f"{k}_s", 0.0) for k in ("reference", "eval")])
    return {"walls": walls, "parts": parts, "shapes": sorted(shapes)}


def run_row(row: dict, plugin_root: Path | None) -> dict:
    env = dict(os.environ)
    if plugin_root is not None:  # the revision's core and plugin first on the path
        paths = [str(plugin_root), str(plugin_root / "plugins" / "autocomp_cuda")]
        env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
    load = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, __file__, "--row", json.dumps(row)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{row['label']} failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load}


def export(rev: str, where: Path) -> Path:
    """The core and the CUDA plugin of ``rev``, as files (no worktree in the checkout)."""
    where.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "autocomp_core", "plugins/autocomp_cuda"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also evaluate with this revision's plugin")
    parser.add_argument("--after", metavar="REV", help="this revision's plugin, not the tree's")
    parser.add_argument("--repeat", type=int, default=5, help="evaluations per row and round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--reps", type=int, default=8, help="timed calls per evaluation")
    parser.add_argument("--problem", action="append", help="only this problem (repeatable)")
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        print(json.dumps(asyncio.run(evaluate_row(json.loads(args.row)))))
        return
    with tempfile.TemporaryDirectory(prefix="kb-second-shape-") as tmp:
        before = export(args.before, Path(tmp) / "before") if args.before else None
        current = export(args.after, Path(tmp) / "after") if args.after else None
        name = args.after or "current"
        rows = []
        for problem, program, sizes in PROBLEMS:
            if args.problem and problem not in args.problem:
                continue
            rows.append((f"{problem} one shape, batch 1", problem, program, sizes, current))
            if before is not None and problem == "kb/L1/55":  # (kb/L3/19 is newer than REV)
                rows.append((f"{problem} shrunk ({args.before})", problem, program, {}, before))
            rows.append((f"{problem} shrunk ({name})", problem, program, {}, current))
        results: dict[str, list[dict]] = {label: [] for label, *_ in rows}
        for r in range(args.rounds):
            for i, (label, problem, program, sizes, root) in enumerate(rows):
                row = {
                    "label": label,
                    "problem": problem,
                    "program": program,
                    "sizes": sizes,
                    "repeat": args.repeat,
                    "reps": args.reps,
                    "round": r,
                    "cache": str(Path(tmp) / f"cache-{r}-{i}"),
                }
                found = run_row(row, root)
                results[label].append(found)
                print(
                    f"round {r + 1} {label:<34} {sum(found['walls']):6.1f} s for {args.repeat} "
                    f"evaluations, load {found['load']:.1f}; shapes "
                    + " and ".join(found["shapes"]),
                    flush=True,
                )
                each = ", ".join(
                    f"{w:.1f} ({r:.1f} + {e:.1f})"
                    for w, (r, e) in zip(found["walls"], found["parts"])
                )
                print(f"    each: wall (reference + build and runs) {each}", flush=True)
    print(f"\ntotals over {args.rounds} round(s) of {args.repeat} evaluations, reps={args.reps}:")
    base = None
    for label, found in results.items():
        total = sum(sum(f["walls"]) for f in found)
        if label.endswith("one shape, batch 1"):
            base = total
        per = statistics.median(w for f in found for w in f["walls"])
        print(f"  {label:<34} {total:7.1f} s  (median {per:5.2f} s)  {total / base:4.2f}x")


if __name__ == "__main__":
    main()
