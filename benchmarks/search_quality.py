"""Beam search vs its equal-budget controls (iid sampling, one agent conversation), side by
side, with a scripted model of known quality.

The problem is the toy backend's ``sum_squares`` (a real Python program, scored by the lines
it executes). The scripted model knows five real transformations of its baseline and how
they depend on each other:

    multiply   square by one multiplication instead of a loop of additions
    for_in     iterate the list instead of indexing it      (any time)
    no_temp    accumulate without temporaries                (needs multiply)
    generator  sum() over a generator                        (needs multiply, for_in)
    map        sum(map(int.__mul__, xs, xs))                 (needs generator)

Each answer applies one transformation whose prerequisites the program it was shown already
has, chosen by a hash of the prompt and the seed; with probability ``--error-rate``
(default 0.2) the program it writes is wrong (it forgets to square). So deep programs need
steps, and a strategy's results measure how well it composes them for the money.

Per seed the beam search runs once with ``control = "iid"`` and once with ``"agent"`` (the
control spends the tokens the search spent). Printed per strategy: the median best speedup
over the seeds, and the median LLM calls it needed to reach 90% of its own best; then what
the held-out check and each control cost in evaluations and wall time (runs of the search
alone, with and without the check, beside them).

Usage: python benchmarks/search_quality.py [--seeds 5] [--iterations 4] [--error-rate 0.2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "toybackend"), str(ROOT / "tests" / "engine")]
os.environ["AUTOCOMP_PLUGINS"] = "toy_plugin"

import anyio  # noqa: E402

from autocomp_core.api import optimize_async  # noqa: E402
from autocomp_core.ledger.store import RunStore  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402

#: transformation -> the ones it needs first
NEEDS = {
    "multiply": set(),
    "for_in": set(),
    "no_temp": {"multiply"},
    "generator": {"multiply", "for_in"},
    "map": {"generator"},
}
MARK = re.compile(r"# applied: ([\w,]*)")


def program(applied: set[str], wrong: bool = False) -> str:
    """sum_squares with these transformations applied (``wrong``: it forgets to square)."""
    mark = f"# applied: {','.join(sorted(applied))}\n"
    sq = "x" if wrong else "x * x"
    if "map" in applied:
        body = (
            "    return sum(map(int.__add__, xs, [0] * len(xs)))\n"
            if wrong
            else ("    return sum(map(int.__mul__, xs, xs))\n")
        )
        return mark + "def solution(xs):\n" + body
    if "generator" in applied:
        return mark + f"def solution(xs):\n    return sum({sq} for x in xs)\n"
    head = (
        "    for x in xs:\n"
        if "for_in" in applied
        else ("    index = 0\n    while index < len(xs):\n        x = xs[index]\n")
    )
    step = "" if "for_in" in applied else "        index = index + 1\n"
    if "multiply" in applied:
        square = (
            f"        total += {sq}\n"
            if "no_temp" in applied
            else (f"        square = {sq}\n        total = total + square\n")
        )
    else:
        square = (
            "        square = 0\n        for _ in range(abs(x)):\n"
            "            square = square + abs(x)\n        total = total + square\n"
        )
        if wrong:
            square = "        total = total + x\n"
    return mark + "def solution(xs):\n    total = 0\n" + head + square + step + "    return total\n"


def digest(*parts: object) -> int:
    text = "\0".join(map(str, parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def shown(prompt: str) -> set[str]:
    """The transformations of the program the prompt shows (the last one it shows)."""
    marks = MARK.findall(prompt)
    return {m for m in marks[-1].split(",") if m} if marks else set()


def scripted_model(seed: int, error_rate: float):
    def answer(request) -> str:
        prompt = request.prompt
        if "Answer with a single number" in prompt:
            return "7"
        have = shown(prompt)
        options = sorted(t for t, needs in NEEDS.items() if t not in have and needs <= have)
        h = digest(seed, prompt)
        if prompt.rstrip().endswith("Plan:"):  # planning: name one transformation
            pick = options[h % len(options)] if options else "multiply"
            return f"Apply the {pick} transformation."
        plan = prompt.split("## Plan\n", 1)[1].split("\n", 1)[0] if "## Plan\n" in prompt else ""
        named = [t for t in options if t in plan]
        pick = named[0] if named else (options[h % len(options)] if options else None)
        wrong = (h >> 20) % 1000 < error_rate * 1000
        code = program(have | ({pick} if pick else set()), wrong)
        return f"```python\n{code}```"

    return answer


def speedups_and_calls(store: RunStore, control: bool) -> tuple[float, int]:
    """(best speedup, LLM calls made before the first program within 90% of it)."""
    root = store.candidate("root")
    assert root is not None
    cands = [c for c in store.candidates() if c.correct and ((c.iteration == -1) == control)]
    created = store.created()
    calls = sorted(c["created"] for c in store.llm_calls() if (c["phase"] == "control") == control)
    best = max((root.score / c.score for c in cands), default=1.0)
    first = min((created[c.id] for c in cands if root.score / c.score >= 0.9 * best), default=None)
    needed = len(calls) if first is None else sum(1 for t in calls if t <= first)
    return best, needed


async def one(
    seed: int, iterations: int, error_rate: float, control: str, tmp: Path, held_out: bool = True
):
    async with LLMTestServer(scripted_model(seed, error_rate)) as server:
        run_dir = tmp / f"{control}-{seed}-{held_out}"
        config = {
            "backend": "toy",
            "problem": "sum_squares",
            "seed": seed,
            "run_dir": str(run_dir),
            "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
            "search": {
                "iterations": iterations,
                "beam_size": 3,
                "plans_per_candidate": 3,
                "codes_per_plan": 1,
                "control": control,
                "held_out": held_out,
            },
            "llm": {"max_retries": 1, "timeout_s": 30},
            # off: its runs would plan with what earlier ones (and the user's) wrote back
            "playbook": {"enabled": False},
        }
        summary = await optimize_async(config, progress=False)
    store = RunStore(run_dir)
    try:
        cost = (summary.data["evaluations"], summary.data["wall_s"])
        return speedups_and_calls(store, False), speedups_and_calls(store, True), cost
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--error-rate", type=float, default=0.2)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, int]]] = {"beam": [], "iid": [], "agent": []}
    costs: dict[str, list[tuple[int, float]]] = {"none": [], "held_out": [], "iid": [], "agent": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, args.seeds + 1):
            for control in ("iid", "agent"):
                beam, other, cost = anyio.run(
                    one, seed, args.iterations, args.error_rate, control, Path(tmp)
                )
                if control == "iid":
                    results["beam"].append(beam)
                results[control].append(other)
                costs[control].append(cost)
            for held_out in (False, True):  # the search alone: what the held-out check costs
                *_, cost = anyio.run(
                    one, seed, args.iterations, args.error_rate, "none", Path(tmp), held_out
                )
                costs["held_out" if held_out else "none"].append(cost)
    print(
        f"sum_squares (toy), {args.seeds} seeds, {args.iterations} iterations, "
        f"error rate {args.error_rate:g}; controls at the beam's token spend"
    )
    print(f"{'strategy':10} {'best speedup (median)':>22} {'calls to 90% (median)':>22}")
    for name, rows in results.items():
        best = statistics.median(b for b, _ in rows)
        calls = statistics.median(c for _, c in rows)
        print(f"{name:10} {best:>21.1f}x {calls:>22.0f}")
    base_evals = statistics.median(e for e, _ in costs["none"])
    base_wall = statistics.median(w for _, w in costs["none"])
    print(
        f"\ncost per run (median), against the search alone ({base_evals:.0f} evaluations, "
        f"{base_wall:.1f} s):"
    )
    for name, what in (
        ("held_out", "+ held-out check"),
        ("iid", "+ held-out + iid control"),
        ("agent", "+ held-out + agent control"),
    ):
        evals = statistics.median(e for e, _ in costs[name])
        wall = statistics.median(w for _, w in costs[name])
        print(
            f"  {what:28} {evals:>4.0f} evaluations ({evals / base_evals:.2f}x), "
            f"{wall:.1f} s ({wall / base_wall:.2f}x)"
        )


if __name__ == "__main__":
    main()
