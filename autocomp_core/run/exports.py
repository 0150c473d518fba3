"""Readable exports of a run directory, rebuilt from the journal at any time.

``best<ext>``, ``candidates/iter-<i>/`` (every program and an index), ``summary.json``
and ``report.md``. The engine writes them at the end of every iteration and at the end
of the run; each file is written whole and then renamed into place, so a reader (or a
machine that dies mid-write) never sees half a file. The journal (``run.sqlite``) stays
the source of truth.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..contract.backend import Backend, Problem
from ..engine.control import CONTROL_ITERATION, control_summary
from ..ledger.accounting import Ledger
from ..ledger.labels import LABELS, audit_label
from ..ledger.store import (
    ATTEMPT_LOST,
    INFRA_ERROR,
    Candidate,
    Origin,
    RunStore,
    best_candidate,
)
from ..numbers import metric_text


def _num(x: float | None) -> float | None:
    return None if x is None or math.isinf(x) else x


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that the path holds the old or the new file, never
    a mix: write a temporary file beside it, flush it to disk, rename it over."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def target_info(backend: Backend, problem: Problem) -> dict[str, Any]:
    """What a report needs to know of the target, recorded in the journal at the start."""
    return {
        "backend": backend.name,
        "problem": problem.id,
        "unit": backend.metric_unit,
        "language": backend.language,
        "file_extension": backend.file_extension,
        "metric_lower_bound": backend.metric_lower_bound(problem),
        "hardware": backend.hardware_for(problem).model_dump(mode="json"),
    }


def write_exports(
    run_dir: Path,
    store: RunStore,
    backend: Backend,
    problem: Problem,
    ledger: Ledger,
    stop_reason: str | None,
    drop_root: bool = False,
    iterations: Iterable[int] | None = None,
    stop_detail: str = "",
) -> dict[str, Any]:
    """Write the exports; ``stop_reason`` None means the run is still going
    (``stop_detail``: the reason in one line for a person, when it needs one).

    ``iterations`` limits the rewritten ``candidates/iter-<i>/`` folders to those (the
    engine passes the iteration that just finished); None rewrites them all."""
    cands = store.candidates()
    ext = backend.file_extension
    root = next((c for c in cands if c.origin == "root"), None)
    # the programs the run started from (what schedule reuse adds to beam 0 is a result)
    initial = min(
        (c.score for c in cands if c.iteration == 0 and c.origin != Origin.REUSE),
        default=math.inf,
    )
    best = best_candidate(cands, drop_root, store.overfit())
    if best is not None:
        atomic_write(run_dir / f"best{ext}", best.code or "")
    by_iter: dict[int, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_iter[c.iteration].append(c)
    wanted = set(by_iter) if iterations is None else set(iterations) & set(by_iter)
    infra = store.infra_errors()
    for i in sorted(wanted):
        folder = "control" if i == CONTROL_ITERATION else f"iter-{i}"
        _write_iteration(run_dir / "candidates" / folder, by_iter[i], store, ext, infra)
    bound = backend.metric_lower_bound(problem)
    best_score = best.score if best else math.inf
    last = store.last_iteration()
    summary = {
        "backend": backend.name,
        "problem": problem.id,
        "unit": backend.metric_unit,
        "hardware": backend.hardware_for(problem).model_dump(mode="json"),
        "status": "running" if stop_reason is None else "stopped",
        "stop_reason": stop_reason,
        "stop_detail": stop_detail or None,
        "iterations_completed": last or 0,
        "initial_score": _num(initial),
        "best_score": _num(best_score),
        "speedup": (initial / best_score)
        if best and best_score > 0 and not math.isinf(initial)
        else None,
        "best_candidate": best.id if best else None,
        "metric_lower_bound": bound,
        "fraction_of_bound": (bound / best_score) if bound and best and best_score > 0 else None,
        "impossible_result": bool(bound and best and best_score < bound),
        "held_out": held_out_summary(store, best),
        "saved_at_bound": saved_at_bound(store, stop_reason, ledger, last or 0),
        # iterations beyond its own, from a suite's pool (what runs stopped at the bound left)
        "iterations_granted": store.get_meta("granted_iterations", 0) or 0,
        "control": control_summary(store, ledger.to_dict(), best, initial),
        "labels": label_counts(store, cands),
        "best_label": audit_label(best, store.evaluation(best.eval_key or ""), store.overfit())[0]
        if best
        else None,
        "candidates": len(cands),
        "correct_candidates": sum(c.correct for c in cands),
        "beam_history": {i: s.get("best") for i, s in store.iteration_stats().items()},
        "iteration_wall_s": {
            i: s.get("wall_s") for i, s in store.iteration_stats().items() if i > 0
        },
        "models": store.get_meta("models"),
        "isolation": store.get_meta("isolation"),  # the sandbox's, for this run's candidates
        "context_selection": store.get_meta("context_selection") or {},
        "prompt_context": prompt_context(store),
        "generated_menus": len(store.events("generated_menu")),
        **ledger.to_dict(),
        # of ``evaluations``: those that ended in an infra error (lost with their node on
        # every attempt, or the evaluator failed), each evaluated again on resume
        "evaluations_infra_error": len(store.events(INFRA_ERROR)),
        "evaluation_attempts_lost": len(store.events(ATTEMPT_LOST)),
    }
    atomic_write(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    atomic_write(run_dir / "report.md", render_report(summary, best, root, backend))
    return summary


def saved_at_bound(
    store: RunStore, stop_reason: str | None, ledger: Ledger, done: int
) -> dict[str, Any] | None:
    """What stopping at the bound saved (``search.stop_at_bound``): the iterations not run,
    and the tokens they would have cost at this run's mean per iteration (an estimate)."""
    if stop_reason != "stop_at_bound":
        return None
    planned = ((store.get_meta("config") or {}).get("search") or {}).get("iterations", done)
    planned += store.get_meta("granted_iterations", 0) or 0
    left = max(0, planned - done)
    per_iteration = ledger.to_dict().get("tokens", 0) / max(1, done)
    return {"iterations": left, "tokens_estimate": round(left * per_iteration)}


def label_counts(store: RunStore, cands: list[Candidate]) -> dict[str, int]:
    """How many candidates carry each audit label (``ledger.labels``)."""
    overfit = store.overfit()
    rejected = {
        e["candidate"]: e.get("reason", "")
        for e in store.events("candidate_rejected")
        if e.get("candidate")
    }
    counts = dict.fromkeys(LABELS, 0)
    for c in cands:
        result = store.evaluation(c.eval_key) if c.eval_key else None
        label, _ = audit_label(c, result, overfit, rejected.get(c.id))
        if label is not None:
            counts[label] += 1
    return counts


def held_out_summary(store: RunStore, best: Candidate | None) -> dict[str, Any]:
    """The held-out check in numbers: programs checked, found overfit, and the best's
    search score beside its held-out score (None when it was not checked: the baseline,
    the check off, or a budget reached first)."""
    verdicts = store.held_out_verdicts()
    mine = verdicts.get(best.id) if best is not None else None
    return {
        "checked": len(verdicts),
        "overfit": sorted(cid for cid, v in verdicts.items() if not v["passed"]),
        "best_search_score": _num(best.score) if best is not None else None,
        "best_held_out_score": _num(mine["score"]) if mine and mine["passed"] else None,
    }


def prompt_context(store: RunStore) -> list[dict[str, Any]]:
    """Which ISA sections and examples the prompts used: one row per distinct combination
    and phase, with the number of prompts that used it."""
    counts: dict[tuple, int] = defaultdict(int)
    for call in store.llm_calls():
        context = call["request"].get("context") or {}
        if context:
            isa = context.get("isa", "all")
            key = (call["phase"], json.dumps(isa), tuple(context.get("examples", [])))
            counts[key] += 1
    return [
        {"phase": phase, "isa": json.loads(isa), "examples": list(examples), "prompts": n}
        for (phase, isa, examples), n in sorted(counts.items())
    ]


def _context_lines(s: dict[str, Any]) -> list[str]:
    def titles(isa: Any) -> str:
        if isa == "all":
            return "whole ISA"
        if not isa:
            return "none"
        return "; ".join(
            t if isinstance(t, str) else f"{t['section']} ({', '.join(t['subsections'])})"
            for t in isa
        )

    chosen = s["context_selection"]
    lines = ["", "## Prompt context", ""]
    if "isa" in chosen:
        c = chosen["isa"]
        lines.append(
            f"- ISA selection: {c['chars_before']} -> {c['chars_after']} characters; "
            f"kept: {titles(c['sections'])}" + (f" ({c['reason']})" if "reason" in c else "")
        )
    if "examples" in chosen:
        c = chosen["examples"]
        kept = c["examples"] if c["examples"] == "all" else ", ".join(c["examples"]) or "none"
        lines.append(f"- example selection: {c['total']} examples, kept: {kept}")
    if s["generated_menus"]:
        lines.append(f"- generated menus: {s['generated_menus']} (one per parent and iteration)")
    lines += ["", "| phase | ISA sections | examples | prompts |", "|---|---|---|---|"]
    lines += [
        f"| {r['phase']} | {titles(r['isa'])} | {', '.join(r['examples']) or '-'} | "
        f"{r['prompts']} |"
        for r in s["prompt_context"]
    ]
    return lines


def _write_iteration(
    folder: Path,
    group: list[Candidate],
    store: RunStore,
    ext: str,
    infra: dict[str, dict[str, Any]],
) -> None:
    """One iteration's programs and an index of them (lineage, plan, score, outcome)."""
    folder.mkdir(parents=True, exist_ok=True)
    beam = set(store.beam(group[0].iteration) or [])  # selected when the iteration ended
    index = []
    for c in sorted(group, key=lambda c: c.id):
        if c.code is not None:
            atomic_write(folder / f"{c.id}{ext}", c.code)
        result = (store.evaluation(c.eval_key) or infra.get(c.eval_key)) if c.eval_key else None
        failure = (result or {}).get("failure") or (None if c.code is not None else "no_program")
        index.append(
            {
                "id": c.id,
                "parents": c.parents,
                "origin": c.origin,
                "plan": c.plan,
                "score": _num(c.score),
                "correct": c.correct,
                "failure": failure,
                "in_beam": c.id in beam,
                "plan_model": c.plan_model,
                "code_model": c.code_model,
                "translation_score": c.translation_score,
            }
        )
    atomic_write(folder / "index.json", json.dumps(index, indent=2))


def render_report(
    s: dict[str, Any], best: Candidate | None, root: Candidate | None, backend: Backend
) -> str:
    unit = s["unit"]

    def fmt(v: float | None) -> str:
        return f"{metric_text(v)} {unit}" if v is not None else "n/a"

    lines = [
        f"# autocomp run: {s['backend']} / {s['problem']}",
        "",
        (f"- stop reason: **{s['stop_reason']}**" if s["stop_reason"] else "- **still running**")
        + f" after {s['iterations_completed']} iterations"
        + (f" ({s['stop_detail']})" if s.get("stop_detail") else ""),
        f"- initial: {fmt(s['initial_score'])}; best: {fmt(s['best_score'])}"
        + (f" (**{s['speedup']:.2f}x**)" if s["speedup"] else ""),
        f"- candidates: {s['candidates']} ({s['correct_candidates']} correct)",
        f"- LLM: {s['llm_calls']} calls, {s['tokens']} tokens "
        f"({s['cached_tokens']} cached), ${s['cost_usd']:.4f}",
        f"- evaluations: {s['evaluations']} ({s['evaluation_s']:.1f} s); wall {s['wall_s']:.1f} s"
        + (
            f"; {s['evaluations_infra_error']} ended in an infra error"
            if s.get("evaluations_infra_error")
            else ""
        )
        + (
            f"; {s['evaluation_attempts_lost']} attempts lost with their worker or node"
            if s.get("evaluation_attempts_lost")
            else ""
        ),
        f"- sandbox isolation: {s['isolation']}",
    ]
    if s["metric_lower_bound"]:
        lines.append(
            f"- lower bound: {fmt(s['metric_lower_bound'])}; best reaches "
            f"{100 * (s['fraction_of_bound'] or 0):.1f}% of it"
        )
    if s["impossible_result"]:
        lines.append("- **WARNING: the best result beats the lower bound; treat it as suspect.**")
    lines += _held_out_lines(s, fmt)
    if s.get("control"):
        ctl = s["control"]

        def speed(v: float | None) -> str:
            return f"{v:.2f}x" if v else "none"

        lines.append(
            f"- equal-budget control ({ctl['kind']}, {ctl['samples']} programs, "
            f"{ctl['control_spent']:g} of the search's {ctl['search_spent']:g} {ctl['measure']}): "
            f"best {speed(ctl['control_speedup'])} against the search's "
            f"{speed(ctl['search_speedup'])}"
            + (
                f" (search/control {ctl['search_over_control']:.2f})"
                if ctl["search_over_control"]
                else ""
            )
        )
    if s.get("labels"):
        counts = ", ".join(f"{n} {label}" for label, n in s["labels"].items())
        lines.append(f"- audit labels: {counts}; the best program is **{s['best_label']}**")
    lines += [
        "",
        "## Best score per iteration",
        "",
        "| iteration | best | wall s |",
        "|---|---|---|",
    ]
    lines += [
        f"| {i} | {fmt(v)} | {s['iteration_wall_s'].get(i) or ''} |"
        for i, v in s["beam_history"].items()
    ]
    lines += [
        "",
        "## Usage per phase and model",
        "",
        "| phase | model | calls | failed | input | output | cached | cache writes | cost $ "
        "| latency s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for phase, models in s["llm_by_phase"].items():
        for model, u in models.items():
            lines.append(
                f"| {phase} | {model} | {u['calls']} | {u['failures']} | "
                f"{u['input_tokens']} | {u['output_tokens']} | {u['cached_tokens']} | "
                f"{u.get('cache_write_tokens', 0)} | {u['cost_usd']:.4f} | {u['latency_sum_s']:.1f} |"
            )
    if s["prompt_context"]:
        lines += _context_lines(s)
    if best is not None:
        lines += [
            "",
            f"## Best program ({best.id})",
            "",
            f"Plan: {best.plan or '(original)'}",
            "",
            f"```{backend.language}",
            (best.code or "").rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


def _held_out_lines(s: dict[str, Any], fmt: Callable[[Any], str]) -> list[str]:
    h = s.get("held_out") or {}
    if not h.get("checked"):
        return []
    best = (
        f"best {fmt(h['best_search_score'])} in the search, "
        f"{fmt(h['best_held_out_score'])} on held-out inputs"
        if h.get("best_held_out_score") is not None
        else "the best program was not checked (the baseline, or a budget ran out first)"
    )
    overfit = h.get("overfit") or []
    refused = (
        f"; {len(overfit)} overfit (right in the search, wrong held out, never reported as "
        f"the best): {', '.join(overfit)}"
        if overfit
        else ""
    )
    return [f"- held-out check: {h['checked']} programs checked; {best}{refused}"]
