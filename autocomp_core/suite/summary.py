"""A suite's summary: per problem the baseline, the best, the speedup, what it cost and why
it stopped; across the suite the geometric-mean speedup, the fraction of problems solved
correctly and ``fast_p``.

Every number per problem is read from the run's journal through the report's own reader
(``report.data.run_data``), so this summary and ``autocomp-core report SUITE --html``
agree. Conventions:

- ``speedup``: the baseline's metric over the best correct program's (the baseline itself
  when nothing beat it: 1.0); none when the run has no correct program.
- ``geomean_speedup``: over the problems that have a speedup (as the HTML page does).
- ``correct``: the search found a correct program of its own (not the baseline).
- ``fast_p`` (KernelBench): the fraction of all problems whose speedup is above ``p``;
  a problem without one counts as not fast.
- ``fast_p_vs``: the same against another baseline a backend times beside its own, read
  from the best program's ``speedup_vs_<name>`` extra metric (the CUDA backend's
  ``speedup_vs_compiled``: against ``torch.compile``), for problems where it was timed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..numbers import metric_text
from ..report.data import run_data

FAST_P = (1.0, 1.5, 2.0)
OTHER_BASELINE = "speedup_vs_"


def problem_row(problem: str, run_dir: Path, note: str | None = None) -> dict[str, Any]:
    """One problem of the suite, from its run directory (which may not exist yet); ``note``:
    why it did not run, when its journal cannot say (an error, a budget already spent)."""
    row: dict[str, Any] = {
        "problem": problem,
        "run_dir": run_dir.name,
        "stop_reason": "waiting",
        "baseline": None,
        "best": None,
        "unit": "",
        "speedup": None,
        "correct": False,
        "llm_calls": 0,
        "tokens": 0,
        "cost_usd": 0.0,
        "evaluations": 0,
        "other_speedups": {},
        "best_label": None,
        "held_out_best": None,
        "tokens_saved_at_bound": 0,
        "control_speedup": None,
        "iterations_granted": 0,
    }
    if (run_dir / "run.sqlite").is_file():
        data = run_data(run_dir, problem)
        exported = _exported(run_dir)
        s = data["summary"]
        best = next((n for n in data["candidates"] if n["id"] == s["best_id"]), None)
        extra = ((best or {}).get("eval") or {}).get("extra") or {}
        row.update(
            stop_reason=data["status"]["state"],
            baseline=s["initial_score"],
            best=s["best_score"],
            unit=data["target"].get("unit", ""),
            speedup=s["speedup"],
            correct=any(
                n["origin"] != "root" and n["score"] is not None for n in data["candidates"]
            ),
            llm_calls=s["llm_calls"],
            tokens=s["tokens"],
            cost_usd=s["cost_usd"],
            evaluations=s["evaluations"],
            best_label=(best or {}).get("label"),
            tokens_saved_at_bound=int(
                (exported.get("saved_at_bound") or {}).get("tokens_estimate", 0)
            ),
            control_speedup=(exported.get("control") or {}).get("control_speedup"),
            iterations_granted=exported.get("iterations_granted", 0),
            held_out_best=s.get("held_out", {}).get("best_held_out_score"),
            other_speedups={
                k.removeprefix(OTHER_BASELINE): v
                for k, v in extra.items()
                if k.startswith(OTHER_BASELINE) and v
            },
        )
    if note:
        row["stop_reason"] = note
    return row


def _exported(run_dir: Path) -> dict[str, Any]:
    """The run's summary.json (what only the engine knows: the control, the tokens saved)."""
    try:
        data = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _control(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The search against its equal-budget control, over the problems that ran both: the
    geometric means of their speedups and their ratio."""
    both = [r for r in rows if r.get("control_speedup") and r["speedup"]]
    if not both:
        return None
    search = geometric_mean([r["speedup"] for r in both])
    control = geometric_mean([r["control_speedup"] for r in both])
    return {
        "problems": len(both),
        "geomean_search": search,
        "geomean_control": control,
        "search_over_control": search / control if search and control else None,
    }


def geometric_mean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fast_p(speedups: list[float | None], p: float) -> float:
    """KernelBench's ``fast_p``: the fraction of all problems faster than ``p`` times."""
    return sum(1 for s in speedups if s is not None and s > p) / len(speedups) if speedups else 0.0


def summarize(rows: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """The suite's numbers from its problem rows."""
    speedups = [r["speedup"] for r in rows]
    others = sorted({name for r in rows for name in r["other_speedups"]})
    return {
        "problems": len(rows),
        "stop_reason": stop_reason,
        "geomean_speedup": geometric_mean([s for s in speedups if s]),
        "fraction_correct": sum(r["correct"] for r in rows) / len(rows) if rows else 0.0,
        "fast_p": {f"{p:g}": fast_p(speedups, p) for p in FAST_P},
        "fast_p_vs": {
            name: {
                "timed": sum(name in r["other_speedups"] for r in rows),
                **{
                    f"{p:g}": fast_p([r["other_speedups"].get(name) for r in rows], p)
                    for p in FAST_P
                },
            }
            for name in others
        },
        "llm_calls": sum(r["llm_calls"] for r in rows),
        "tokens": sum(r["tokens"] for r in rows),
        "cost_usd": sum(r["cost_usd"] for r in rows),
        "evaluations": sum(r["evaluations"] for r in rows),
        "not_clean": [r["problem"] for r in rows if r["best_label"] not in (None, "clean")],
        "tokens_saved_at_bound": sum(r.get("tokens_saved_at_bound", 0) for r in rows),
        "control": _control(rows),
        "per_problem": rows,
    }


def _num(value: float | None) -> str:
    return metric_text(value, missing="-")


def _speed(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def to_markdown(title: str, summary: dict[str, Any]) -> str:
    rows = summary["per_problem"]
    lines = [
        f"# {title}",
        "",
        "| problem | stop reason | baseline | best | held out | label | speedup | correct "
        "| LLM calls | tokens | cost |",
        "|---|---|---:|---:|---:|:-:|---:|:-:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['problem']} | {r['stop_reason']} | {_num(r['baseline'])} {r['unit']} "
            f"| {_num(r['best'])} {r['unit']} | {_num(r.get('held_out_best'))} "
            f"| {r.get('best_label') or '-'} | {_speed(r['speedup'])} "
            f"| {'yes' if r['correct'] else 'no'} | {r['llm_calls']} | {r['tokens']:,} "
            f"| ${r['cost_usd']:.4f} |"
        )
    n = summary["problems"]
    fast = ", ".join(f"fast_{p} {v:.0%}" for p, v in summary["fast_p"].items())
    lines += [
        "",
        f"- problems: {n}; stop reason: {summary['stop_reason']}",
        f"- geometric-mean speedup: {_speed(summary['geomean_speedup'])} "
        f"(over the {sum(1 for r in rows if r['speedup'])} problems with a correct program)",
        f"- correct: {sum(r['correct'] for r in rows)} of {n} "
        f"({summary['fraction_correct']:.0%}) found a correct program of their own",
        f"- faster than the baseline: {fast}",
    ]
    for name, values in summary["fast_p_vs"].items():
        vs = ", ".join(f"fast_{p} {v:.0%}" for p, v in values.items() if p != "timed")
        lines.append(f"- against the {name} baseline (timed for {values['timed']} of {n}): {vs}")
    if summary.get("control"):
        ctl = summary["control"]
        lines.append(
            f"- against the equal-budget control ({ctl['problems']} problems): geometric-mean "
            f"speedup {_speed(ctl['geomean_search'])} by the search, "
            f"{_speed(ctl['geomean_control'])} by the control "
            f"(ratio {ctl['search_over_control']:.2f})"
        )
    if summary.get("tokens_saved_at_bound"):
        granted = {
            r["problem"]: r["iterations_granted"] for r in rows if r.get("iterations_granted")
        }
        lines.append(
            f"- stopping at the bound saved about {summary['tokens_saved_at_bound']:,} tokens, "
            "left in the suite's one budget for the problems still running"
            + (
                "; its iterations went to those with the most headroom: "
                + ", ".join(f"{p} +{n}" for p, n in granted.items())
                if granted
                else ""
            )
        )
    if summary.get("not_clean"):
        lines.append(
            "- **best program not clean** (flagged, refused or overfit: review before trusting): "
            + ", ".join(summary["not_clean"])
        )
    lines.append(
        f"- LLM: {summary['llm_calls']} calls, {summary['tokens']:,} tokens, "
        f"${summary['cost_usd']:.4f}; {summary['evaluations']} evaluations"
    )
    return "\n".join(lines) + "\n"
