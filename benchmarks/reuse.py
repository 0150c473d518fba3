"""Learning across runs on shape siblings: schedule reuse and the playbook, each against a
run that starts from nothing, with a scripted model of known quality.

The problems are the toy backend's shape siblings of ``sum_squares``: ``sum_squares-<N>``,
the same operator scored on lists of length N (the playbook's family ``sum_squares``,
shapes ``[N]``). The scripted model knows six transformations of the baseline, with
prerequisites, and writes real programs that the toy backend evaluates:

    multiply   square by one multiplication instead of a loop of additions
    for_in     iterate the list instead of indexing it      (any time)
    no_temp    accumulate without temporaries                (needs multiply)
    counted    loop over collections.Counter(xs): each distinct value once, times its count
                                                             (needs multiply, for_in)
    generator  sum() over a generator                        (needs multiply, for_in)
    symmetric  a trap: "count x and -x once", always a wrong answer

They pay differently by shape, which is what keeps reuse from being trivially perfect
(measured speedups over the baseline, the toy's executed-lines metric):

    N = 8     for_in+multiply+no_temp 20.4x, with counted 19.5x: counted costs a line per
              call and lists of 8 rarely repeat a value, so it does not pay here
    N = 64    with counted 33.5x, without 25.6x
    N = 512   with counted 138x, without 28.0x
    generator pays nowhere (each element resumes it: a call); symmetric never works

The model sees only its prompts. Planning, it names one transformation whose prerequisites
the program it was shown has (the last ``# applied:`` mark in the prompt), chosen by a hash
of the prompt and the seed; when the prompt has the playbook's "what worked / what failed"
section, it prefers a transformation a "worked" line names, else avoids those only "failed"
lines name. Implementing, it applies the transformation the plan names (reuse hands it the
donor's plans), or a hashed pick when the plan names none it can apply; repairing, it writes
the failing program's transformations again. With probability ``--error-rate`` (default
0.2) a program it writes is wrong (it forgets to square).

Per seed: a donor run on ``sum_squares-64`` (``--donor``, ``--donor-calls`` LLM calls),
writing a fresh playbook; then on each other sibling (``--siblings``) three runs, each twice:
once with ``--calls`` LLM calls (80) to count the calls to the target, once with the fixed
``--budget`` (40) to compare the best reached:

    plain      from nothing (playbook off)
    reuse      ``search.reuse = [donor]`` (playbook off)
    playbook   a copy of the donor's playbook (each run its own: they do not learn from each
               other)

Printed per sibling, medians over the seeds: the LLM calls a run made before its first
program within 90% of the target (a run that never gets there counts all its calls, and the
table says how many did), where the target is the donor's best program's speedup measured on
this sibling (the donor's own speedup is of another shape: 64's best is 33.5x, 8's 20.4x);
and the best speedup a run reached at the budget. Ratios: calls plain / reuse and plain /
playbook (above 1: fewer calls), best playbook / plain and reuse / plain (above 1: more).
Reproducible: a seed's runs are the same each time. The held-out check is off (the scripted
programs are not shape-specific, and it would double the evaluations).

Measured (5 seeds, the defaults; medians): reuse reached the target in 4-5 calls where a
plain run took 54-60 (12-13.5x fewer; at N=512 two plain runs of five never got there), and
at 40 calls 1.36x (N=8) and 7.4x (N=512) the plain run's best. The playbook helps little: 1.1-1.3x fewer calls to the target, and the same median
best at 40 calls (1.00x). Why, and where each loses:

- the playbook only steers which transformation a plan names (the donor's, and not the
  trap); the beam still takes an iteration per step (9 plans and 9 programs after the first),
  so at 40 calls a run is two or three steps deep either way, short of the 4-step program;
- reuse applies the whole schedule in its first few calls, but a step whose program fails
  twice is skipped, and the steps that needed it then do not apply (one seed at N=512: the
  ``multiply`` step failed, so ``no_temp`` and ``counted`` could not follow: 42 calls to the
  target, and 28x at 40 calls against the target's 138x);
- on N=8 the donor's ``counted`` step costs (19.5x after it, 20.4x before); reuse still gets
  within 90% at once (its first beam holds the steps before it too), and a playbook run plans
  ``counted`` as often as what pays;
- a donor that did not find ``counted`` (one seed) sets the target at N=512 to 28x, what its
  program reaches there: reuse cannot hand on what the donor did not learn (that seed's
  reuse run reached 138x, by its own search after the schedule).

Usage: python benchmarks/reuse.py [--seeds 5] [--iterations 12] [--calls 80] [--budget 40]
           [--donor-calls 80] [--error-rate 0.2] [--donor 64] [--siblings 8,512] [--per-seed]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests" / "toybackend") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests" / "toybackend"))
_plugins = [m for m in os.environ.get("AUTOCOMP_PLUGINS", "").split(",") if m.strip()]
os.environ["AUTOCOMP_PLUGINS"] = ",".join(dict.fromkeys([*_plugins, "toy_plugin"]))

import anyio  # noqa: E402
from toy_plugin import ToyBackend  # noqa: E402

from autocomp_core import EvalContext  # noqa: E402
from autocomp_core.api import optimize_async  # noqa: E402
from autocomp_core.ledger.store import Origin, RunStore  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402

#: transformation -> the ones it needs first (``symmetric`` is the trap: always wrong)
NEEDS = {
    "multiply": set(),
    "for_in": set(),
    "no_temp": {"multiply"},
    "counted": {"multiply", "for_in"},
    "generator": {"multiply", "for_in"},
    "symmetric": set(),
}
MARK = re.compile(r"# applied: ([\w,]*)")
NAMES = re.compile(r"\b(" + "|".join(NEEDS) + r")\b")
LESSONS = "## What worked on similar problems"


def program(applied: set[str], wrong: bool = False) -> str:
    """sum_squares with these transformations applied (``wrong``: it forgets to square)."""
    mark = f"# applied: {','.join(sorted(applied))}\n"
    sq = "x" if wrong or "symmetric" in applied else "x * x"
    head = "from collections import Counter\n\n" if "counted" in applied else ""
    if "generator" in applied:
        body = (
            f"    counts = Counter(xs)\n    return sum(n * {sq} for x, n in counts.items())\n"
            if "counted" in applied
            else f"    return sum({sq} for x in xs)\n"
        )
        return mark + head + "def solution(xs):\n" + body
    step, weight = "", ""
    if "counted" in applied:
        loop, weight = "    counts = Counter(xs)\n    for x, n in counts.items():\n", "n * "
    elif "for_in" in applied:
        loop = "    for x in xs:\n"
    else:
        loop = "    index = 0\n    while index < len(xs):\n        x = xs[index]\n"
        step = "        index = index + 1\n"
    if "multiply" in applied:
        square = (
            f"        total += {weight}{sq}\n"
            if "no_temp" in applied
            else f"        square = {sq}\n        total = total + {weight}square\n"
        )
    elif sq == "x":
        square = "        total = total + x\n"
    else:
        square = (
            "        square = 0\n        for _ in range(abs(x)):\n"
            "            square = square + abs(x)\n        total = total + square\n"
        )
    body = "    total = 0\n" + loop + square + step + "    return total\n"
    return mark + head + "def solution(xs):\n" + body


def digest(*parts: object) -> int:
    text = "\0".join(map(str, parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def shown(prompt: str) -> set[str]:
    """The transformations of the program the prompt shows (the last one it shows)."""
    marks = MARK.findall(prompt)
    return {m for m in marks[-1].split(",") if m} if marks else set()


def lessons(prompt: str) -> tuple[set[str], set[str]]:
    """(named by "worked" lines, named only by "failed" lines) of the playbook's section."""
    if LESSONS not in prompt:
        return set(), set()
    section = prompt.split(LESSONS, 1)[1].split("\n## ", 1)[0]
    worked: set[str] = set()
    failed: set[str] = set()
    for line in section.splitlines():
        kind = line.strip().removeprefix("- ").split(" ", 1)[0]
        if kind in ("worked", "failed"):
            (worked if kind == "worked" else failed).update(NAMES.findall(line))
    return worked, failed - worked


def plan_pick(options: list[str], prompt: str, h: int) -> str:
    worked, failed = lessons(prompt)
    preferred = [t for t in options if t in worked] or [t for t in options if t not in failed]
    pool = preferred or options
    return pool[h % len(pool)]


def scripted_model(seed: int, error_rate: float):
    def answer(request) -> str:
        prompt = request.prompt
        if "Answer with a single number" in prompt:
            return "7"
        have = shown(prompt)
        options = sorted(t for t, needs in NEEDS.items() if t not in have and needs <= have)
        h = digest(seed, prompt)
        if prompt.rstrip().endswith("Plan:"):  # planning: name one transformation
            pick = plan_pick(options, prompt, h) if options else "no_temp"
            return f"Apply the {pick} transformation."
        wrong = (h >> 20) % 1000 < error_rate * 1000
        if "## Failing program" in prompt:  # a repair: the same transformations, again
            return f"```python\n{program(have, wrong)}```"
        plan = prompt.split("## Plan\n", 1)[1].split("\n", 1)[0] if "## Plan\n" in prompt else ""
        named = [t for t in NAMES.findall(plan) if t in options]
        pick = named[0] if named else (options[h % len(options)] if options else None)
        return f"```python\n{program(have | ({pick} if pick else set()), wrong)}```"

    return answer


@dataclass
class Outcome:
    """One run, as the table reads it."""

    run_dir: Path
    best: float  # best speedup over its baseline
    calls: int  # LLM calls it made
    calls_to_target: int | None = None  # before its first program within 90% of the target
    plan_prompts: list[str] = field(default_factory=list, repr=False)


def read_run(run_dir: Path, target: float | None, plan_prompts: list[str]) -> Outcome:
    store = RunStore(run_dir, readonly=True)
    try:
        root = store.candidate("root")
        assert root is not None and root.correct
        cands = [c for c in store.candidates() if c.correct]
        created = store.created()
        calls = sorted(c["created"] for c in store.llm_calls())
    finally:
        store.close()
    best = max(root.score / c.score for c in cands)
    first = None
    if target is not None:
        hits = [created[c.id] for c in cands if root.score / c.score >= 0.9 * target]
        first = sum(1 for t in calls if t <= min(hits)) if hits else None
    return Outcome(run_dir, best, len(calls), first, plan_prompts)


def config(server: LLMTestServer, seed: int, problem: str, run_dir: Path, args, **extra) -> dict:
    return {
        "backend": "toy",
        "problem": problem,
        "seed": seed,
        "run_dir": str(run_dir),
        "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
        "search": {
            "iterations": args.iterations,
            "beam_size": 3,
            "plans_per_candidate": 3,
            "codes_per_plan": 1,
            "held_out": False,
            **extra.pop("search", {}),
        },
        "budget": {"llm_calls": args.calls},
        "llm": {"max_retries": 1, "timeout_s": 30},
        "playbook": {"enabled": False},
        **extra,
    }


async def one_run(seed: int, args, cfg_extra: dict, problem: str, run_dir: Path, target):
    async with LLMTestServer(scripted_model(seed, args.error_rate)) as server:
        await optimize_async(config(server, seed, problem, run_dir, args, **cfg_extra))
        plans = [r.prompt for r in server.requests if r.prompt.rstrip().endswith("Plan:")]
    return read_run(run_dir, target, plans)


async def transplanted(donor: Path, problem: str) -> float:
    """The donor's best program's speedup on ``problem`` (a real evaluation of each)."""
    store = RunStore(donor, readonly=True)
    try:
        best = min((c for c in store.candidates() if c.correct), key=lambda c: c.score)
    finally:
        store.close()
    backend = ToyBackend()
    sibling = backend.load_problem(problem)
    ctx = EvalContext(timeout_s=60)
    base = await backend.evaluate(sibling, sibling.baseline_code, ctx)
    moved = await backend.evaluate(sibling, best.code or "", ctx)
    assert base.correct and moved.correct, moved.feedback
    return base.metric / moved.metric


async def seed_runs(seed: int, args, tmp: Path) -> dict:
    """The donor, then per sibling: the target, and the plain, reuse and playbook runs, once
    with ``args.calls`` LLM calls (``"long"``) and once with ``args.budget`` (``"fixed"``)."""
    where = tmp / f"seed{seed}"
    book = where / "donor-playbook.sqlite"
    pb = {"playbook": {"enabled": True, "path": str(book)}}
    donor_args = with_calls(args, args.donor_calls)
    donor = await one_run(seed, donor_args, pb, f"sum_squares-{args.donor}", where / "donor", None)
    out: dict = {"donor": donor, "siblings": {}}
    for size in args.siblings:
        problem = f"sum_squares-{size}"
        runs: dict = {"target": await transplanted(donor.run_dir, problem)}
        for length, calls in (("long", args.calls), ("fixed", args.budget)):
            copy = where / f"playbook-{size}-{length}.sqlite"  # each run its own copy
            shutil.copyfile(book, copy)
            runs[length] = {}
            for name, extra in (
                ("plain", {}),
                ("reuse", {"search": {"reuse": [str(donor.run_dir)]}}),
                ("playbook", {"playbook": {"enabled": True, "path": str(copy)}}),
            ):
                run_dir = where / f"{name}-{size}-{length}"
                runs[length][name] = await one_run(
                    seed, with_calls(args, calls), extra, problem, run_dir, runs["target"]
                )
        out["siblings"][size] = runs
    return out


def with_calls(args: argparse.Namespace, calls: int) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "calls": calls})


def reused_first_beam(run_dir: Path) -> list[str]:
    """The plans of the reuse candidates in a run's first beam (empty: none)."""
    store = RunStore(run_dir, readonly=True)
    try:
        beam = set(store.beam(0) or [])
        return [
            c.plan or "" for c in store.candidates(0) if c.origin == Origin.REUSE and c.id in beam
        ]
    finally:
        store.close()


def calls_to_target(rows: list[dict], name: str) -> tuple[float, int]:
    """(median calls to 90% of the target, counting all of a run's calls where it never got
    there; how many runs got there), of the ``"long"`` runs."""
    runs = [r["long"][name] for r in rows]
    got = [o.calls if o.calls_to_target is None else o.calls_to_target for o in runs]
    return statistics.median(got), sum(o.calls_to_target is not None for o in runs)


def table(results: list[dict], args) -> str:
    n = len(results)
    donors = [r["donor"].best for r in results]
    lines = [
        f"sum_squares shape siblings (toy), {n} seeds, error rate {args.error_rate:g}, "
        f"{args.iterations} iterations at most; donor N={args.donor} ({args.donor_calls} calls, "
        f"median best {statistics.median(donors):.1f}x)",
        f"{'':13} | calls to 90% of target, {args.calls}-call runs (median) | "
        f"best at a {args.budget}-call budget (median)",
        f"{'N':>5} {'target':>7} | {'plain':>8} {'reuse':>8} {'playbook':>8} "
        f"{'plain/reuse':>11} {'plain/pb':>8} | {'plain':>7} {'reuse':>7} {'playbook':>8} "
        f"{'pb/plain':>8} {'reuse/plain':>11}",
    ]
    for size in args.siblings:
        rows = [r["siblings"][size] for r in results]
        target = statistics.median(r["target"] for r in rows)
        calls = {name: calls_to_target(rows, name) for name in ("plain", "reuse", "playbook")}
        best = {
            name: statistics.median(r["fixed"][name].best for r in rows)
            for name in ("plain", "reuse", "playbook")
        }
        cells = " ".join(f"{c:>4.0f} {hit}/{n}" for c, hit in calls.values())
        lines.append(
            f"{size:>5} {target:>6.1f}x | {cells} "
            f"{calls['plain'][0] / calls['reuse'][0]:>10.2f}x "
            f"{calls['plain'][0] / calls['playbook'][0]:>7.2f}x | "
            f"{best['plain']:>6.1f}x {best['reuse']:>6.1f}x {best['playbook']:>7.1f}x "
            f"{best['playbook'] / best['plain']:>7.2f}x {best['reuse'] / best['plain']:>10.2f}x"
        )
    lines.append(
        "target: the donor's best program's speedup on this N; k/n: the seeds whose run got "
        "within 90% of it (one that did not counts all its calls)"
    )
    return "\n".join(lines)


def per_seed(seed: int, result: dict) -> str:
    """One seed's runs: best speedup, calls to the target, calls in all."""
    donor = result["donor"]
    lines = [f"seed {seed}: donor {donor.best:.1f}x in {donor.calls} calls"]
    for size, runs in result["siblings"].items():
        lines.append(f"  N={size} target {runs['target']:.1f}x")
        for length in ("long", "fixed"):
            cells = [
                f"{name} {o.best:.1f}x, {o.calls_to_target} to target, {o.calls} calls"
                for name, o in runs[length].items()
            ]
            lines.append(f"    {length}: " + "; ".join(cells))
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--calls", type=int, default=80, help="LLM calls of a run to 90%%")
    parser.add_argument("--budget", type=int, default=40, help="the fixed budget, LLM calls")
    parser.add_argument("--donor-calls", type=int, default=80, help="LLM calls of the donor")
    parser.add_argument("--per-seed", action="store_true", help="print each seed's runs too")
    parser.add_argument("--error-rate", type=float, default=0.2)
    parser.add_argument("--donor", type=int, default=64, help="the donor's list length")
    parser.add_argument("--siblings", default="8,512", help="the other list lengths")
    args = parser.parse_args(argv)
    args.siblings = [int(s) for s in args.siblings.split(",")]
    return args


def main() -> None:
    args = parse()
    with tempfile.TemporaryDirectory() as tmp:
        results = [anyio.run(seed_runs, seed, args, Path(tmp)) for seed in range(1, args.seeds + 1)]
        if args.per_seed:
            for seed, result in enumerate(results, 1):
                print(per_seed(seed, result))
        print(table(results, args))


if __name__ == "__main__":
    main()
