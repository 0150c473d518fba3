"""Readable exports of a run directory, rebuilt from the journal at any time.

``best<ext>``, ``candidates/iter-<i>/`` (every program and an index), ``summary.json``
and ``report.md``. The journal (``run.sqlite``) stays the source of truth.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from .accounting import Ledger
from .backend import Backend, Problem
from .store import Candidate, RunStore


def _num(x: float | None) -> float | None:
    return None if x is None or math.isinf(x) else x


def best_candidate(cands: list[Candidate], drop_root: bool) -> Candidate | None:
    correct = [c for c in cands if c.correct]
    if drop_root and any(c.origin != "root" for c in correct):
        correct = [c for c in correct if c.origin != "root"]
    return min(correct, key=lambda c: (c.score, c.iteration, c.id)) if correct else None


def write_exports(run_dir: Path, store: RunStore, backend: Backend, problem: Problem,
                  ledger: Ledger, stop_reason: str, drop_root: bool = False) -> dict[str, Any]:
    cands = store.candidates()
    ext = backend.file_extension
    root = next((c for c in cands if c.origin == "root"), None)
    initial_beam = store.beam(0) or []
    initial = min((c.score for c in cands if c.id in initial_beam), default=math.inf)
    best = best_candidate(cands, drop_root)
    if best is not None:
        (run_dir / f"best{ext}").write_text(best.code or "")
    by_iter: dict[int, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_iter[c.iteration].append(c)
    for i, group in by_iter.items():
        folder = run_dir / "candidates" / f"iter-{i}"
        folder.mkdir(parents=True, exist_ok=True)
        index = []
        for c in sorted(group, key=lambda c: c.id):
            if c.code is not None:
                (folder / f"{c.id}{ext}").write_text(c.code)
            index.append({"id": c.id, "parents": c.parents, "origin": c.origin, "plan": c.plan,
                          "score": _num(c.score), "correct": c.correct,
                          "plan_model": c.plan_model, "code_model": c.code_model,
                          "translation_score": c.translation_score})
        (folder / "index.json").write_text(json.dumps(index, indent=2))
    bound = backend.metric_lower_bound(problem)
    best_score = best.score if best else math.inf
    last = store.last_iteration()
    summary = {
        "backend": backend.name, "problem": problem.id, "unit": backend.metric_unit,
        "hardware": backend.hardware_for(problem).model_dump(mode="json"),
        "stop_reason": stop_reason, "iterations_completed": last or 0,
        "initial_score": _num(initial), "best_score": _num(best_score),
        "speedup": (initial / best_score) if best and best_score > 0 and not math.isinf(initial)
        else None,
        "best_candidate": best.id if best else None,
        "metric_lower_bound": bound,
        "fraction_of_bound": (bound / best_score) if bound and best and best_score > 0 else None,
        "impossible_result": bool(bound and best and best_score < bound),
        "candidates": len(cands), "correct_candidates": sum(c.correct for c in cands),
        "beam_history": {i: s.get("best") for i, s in store.iteration_stats().items()},
        "iteration_wall_s": {i: s.get("wall_s") for i, s in store.iteration_stats().items()
                             if i > 0},
        "models": store.get_meta("models"),
        **ledger.to_dict(),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    (run_dir / "report.md").write_text(render_report(summary, best, root, backend))
    return summary


def render_report(s: dict[str, Any], best: Candidate | None, root: Candidate | None,
                  backend: Backend) -> str:
    unit = s["unit"]

    def fmt(v: float | None) -> str:
        return f"{v:g} {unit}" if v is not None else "n/a"

    lines = [f"# autocomp run: {s['backend']} / {s['problem']}", "",
             f"- stop reason: **{s['stop_reason']}** after {s['iterations_completed']} iterations",
             f"- initial: {fmt(s['initial_score'])}; best: {fmt(s['best_score'])}"
             + (f" (**{s['speedup']:.2f}x**)" if s["speedup"] else ""),
             f"- candidates: {s['candidates']} ({s['correct_candidates']} correct)",
             f"- LLM: {s['llm_calls']} calls, {s['tokens']} tokens "
             f"({s['cached_tokens']} cached), ${s['cost_usd']:.4f}",
             f"- evaluations: {s['evaluations']} ({s['evaluation_s']:.1f} s); wall {s['wall_s']:.1f} s"]
    if s["metric_lower_bound"]:
        lines.append(f"- lower bound: {fmt(s['metric_lower_bound'])}; best reaches "
                     f"{100 * (s['fraction_of_bound'] or 0):.1f}% of it")
    if s["impossible_result"]:
        lines.append("- **WARNING: the best result beats the lower bound; treat it as suspect.**")
    lines += ["", "## Best score per iteration", "", "| iteration | best | wall s |",
              "|---|---|---|"]
    lines += [f"| {i} | {fmt(v)} | {s['iteration_wall_s'].get(i) or ''} |"
              for i, v in s["beam_history"].items()]
    lines += ["", "## Usage per phase and model", "",
              "| phase | model | calls | failed | input | output | cached | cost $ | latency s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for phase, models in s["llm_by_phase"].items():
        for model, u in models.items():
            lines.append(f"| {phase} | {model} | {u['calls']} | {u['failures']} | "
                         f"{u['input_tokens']} | {u['output_tokens']} | {u['cached_tokens']} | "
                         f"{u['cost_usd']:.4f} | {u['latency_sum_s']:.1f} |")
    if best is not None:
        lines += ["", f"## Best program ({best.id})", "", f"Plan: {best.plan or '(original)'}", "",
                  f"```{backend.language}", (best.code or "").rstrip(), "```"]
    return "\n".join(lines) + "\n"
