"""What a run's journal says, as one JSON-ready dict: the data behind the HTML report and
the live dashboard (they render the same dict with the same page).

Everything is read from ``run.sqlite`` through a read-only connection inside one read
transaction, so a run that is still going can be read at any moment and is never
written to.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..config import RunConfig, validate
from ..engine.translation import Translation
from ..errors import ConfigError
from ..ledger.labels import audit_label
from ..ledger.store import DB_NAME, Candidate, Origin, RunStore, best_candidate
from ..llm.types import LLMResponse
from ..llm.usage import UsageLedger
from ..run.exports import held_out_summary

#: evaluation texts longer than this are cut in the report (the journal keeps them whole)
TEXT_LIMIT = 4000
#: examples listed per failure kind
FAILURE_EXAMPLES = 5
#: how deep below a directory runs are looked for (suite/problem/run)
SEARCH_DEPTH = 3


def is_run(path: Path) -> bool:
    return (path / DB_NAME).is_file()


def find_runs(root: Path) -> list[Path]:
    """The run directories at or below ``root`` (a run, or a folder or suite of runs)."""
    if is_run(root):
        return [root]
    found: list[Path] = []
    level = [root]
    for _ in range(SEARCH_DEPTH):
        below = [d for parent in level for d in sorted(_subdirs(parent))]
        found += [d for d in below if is_run(d)]
        level = [d for d in below if not is_run(d)]
    return sorted(found)


def _subdirs(path: Path) -> list[Path]:
    try:
        return [d for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")]
    except OSError:
        return []


def _cut(text: str | None, limit: int = TEXT_LIMIT) -> str:
    text = text or ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters in the journal ...]"


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def run_data(run_dir: Path, name: str | None = None) -> dict[str, Any]:
    """Everything the report shows about one run."""
    store = RunStore(run_dir, readonly=True)
    try:
        with store.reading():
            return _collect(store, run_dir, name or run_dir.name)
    finally:
        store.close()


def _collect(store: RunStore, run_dir: Path, name: str) -> dict[str, Any]:
    config = store.get_meta("config") or {}
    target = _target(store, run_dir, config)
    cands = store.candidates()
    recorded = store.evaluations()
    evals = {c.eval_key: recorded[c.eval_key][0] for c in cands if c.eval_key in recorded}
    finished = {key: recorded[key][1] for key in evals}
    # an evaluation that ended in an infra error has no result row: its journaled result
    # says why (the nodes it was lost with, or the evaluator's failure)
    infra = store.infra_errors()
    shown = {**{c.eval_key: infra[c.eval_key] for c in cands if c.eval_key in infra}, **evals}
    beams: dict[int, list[str]] = {}
    stats = store.iteration_stats()
    for i in sorted({0, *stats}):
        beam = store.beam(i)
        if beam is not None:
            beams[i] = beam
    events = store.events()
    rejected = {
        e["candidate"]: e.get("reason", "")
        for e in events
        if e["event"] == "candidate_rejected" and e.get("candidate")
    }
    settings = _settings(config)
    status = _status(events, settings.search.iterations, beams)
    nodes, codes = _candidates(
        cands, shown, beams, rejected, status["iterations_done"], store.overfit()
    )
    by_id = {c.id: c for c in cands}
    # the programs the run started from (what schedule reuse adds to beam 0 is a result)
    started = [c for c in cands if c.iteration == 0 and c.origin != Origin.REUSE]
    initial = min((c.score for c in started), default=math.inf)
    best = best_candidate(cands, Translation.of(settings.translation).drop_root, store.overfit())
    bound = target.get("metric_lower_bound")
    usage, timeline = _usage_and_timeline(store, evals, finished)
    wall = store.get_meta("wall_s", 0.0) or 0.0
    if status["state"] == "running":
        wall += time.time() - status["session_started"]
    best_score = best.score if best else math.inf
    ended = store.evaluations_ended()
    return {
        "name": name,
        "target": target,
        "status": status,
        "summary": {
            "initial_score": _num(initial),
            "best_score": _num(best_score),
            "best_id": best.id if best else None,
            "speedup": initial / best_score
            if best and best_score > 0 and math.isfinite(initial)
            else None,
            "lower_bound": bound,
            "fraction_of_bound": bound / best_score if bound and best and best_score > 0 else None,
            "impossible": bool(bound and best and best_score < bound),
            "held_out": held_out_summary(store, best),
            "candidates": len(cands),
            "correct": sum(c.correct for c in cands),
            "evaluations": ended,  # as summary.json counts them
            "infra_errors": ended - len(recorded),
            "llm_calls": usage["total"]["calls"],
            "tokens": usage["total"]["input_tokens"] + usage["total"]["output_tokens"],
            "cost_usd": usage["total"]["cost_usd"],
            "wall_s": round(wall, 3),
        },
        "iterations": _iterations(stats, beams, cands, by_id),
        "candidates": nodes,
        "codes": codes,
        "failures": _failures(nodes),
        "usage": usage,
        "timeline": timeline,
    }


def _target(store: RunStore, run_dir: Path, config: dict[str, Any]) -> dict[str, Any]:
    """Recorded at the start of the run; older runs fall back on their summary.json."""
    target = store.get_meta("target")
    if target:
        return target
    target = {
        "backend": config.get("backend", "?"),
        "problem": config.get("problem", "?"),
        "unit": "",
        "language": "",
        "file_extension": "",
        "metric_lower_bound": None,
    }
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
        target.update(
            unit=summary.get("unit", ""), metric_lower_bound=summary.get("metric_lower_bound")
        )
    except (OSError, ValueError):
        pass
    return target


def _settings(config: dict[str, Any]) -> RunConfig:
    """The run's settings with their defaults (a config from another version: defaults)."""
    try:
        return validate(config)
    except ConfigError:
        return RunConfig(backend="?", problem="?")


def _status(
    events: list[dict[str, Any]], total: int, beams: dict[int, list[str]]
) -> dict[str, Any]:
    """running, crashed (a session that started and neither ended nor lives), or the last
    session's stop reason (completed, early_stop, budget.usd, interrupted, ...)."""
    sessions = [e for e in events if e["event"] in ("session_start", "session_end")]
    last = sessions[-1] if sessions else None
    started = next((e for e in reversed(sessions) if e["event"] == "session_start"), None)
    if last is None:
        state = "starting"
    elif last["event"] == "session_end":
        state = last.get("stop_reason") or "stopped"
    else:
        state = "running" if _alive(last) else "crashed"
    done = max((i for i in beams if i > 0), default=0)
    return {
        "state": state,
        "iterations_done": done,
        "iterations_total": total,
        "session_started": started["ts"] if started else None,
        "updated": max((e["ts"] for e in events), default=None),
    }


def _alive(session: dict[str, Any]) -> bool:
    """Whether the process of a session that has not ended still runs. A session on
    another host (a shared file system) is taken as running."""
    if session.get("host") not in (None, socket.gethostname()):
        return True
    try:
        os.kill(int(session.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OSError):
        return True
    return True


def _candidates(
    cands: list[Candidate],
    evals: dict[str, dict[str, Any]],
    beams: dict[int, list[str]],
    rejected: dict[str, str],
    iterations_done: int,
    overfit: set[str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Candidate nodes (lineage, plan, status, score, evaluation) and their programs,
    each distinct program stored once, parents before children (programs that differ a
    little sit close together, which the page's compression rewards)."""
    kept = {cid for beam in beams.values() for cid in beam}
    code_index: dict[str, int] = {}
    codes: list[str] = []
    nodes = []
    for c in sorted(cands, key=lambda c: (c.iteration, c.parents[:1], c.id)):
        result = evals.get(c.eval_key or "", {})
        if c.code is None:
            status, failure = "failed", "no_program"
        elif not c.eval_key:
            status, failure = "pending", None
        elif not c.correct:
            status, failure = "failed", result.get("failure") or "failed"
        elif c.id in kept:
            status, failure = "kept", None
        elif c.iteration > iterations_done:
            status, failure = "correct", None  # its iteration's beam is not chosen yet
        else:
            status, failure = "pruned", None
        code = None
        if c.code is not None:
            if c.code not in code_index:
                code_index[c.code] = len(codes)
                codes.append(c.code)
            code = code_index[c.code]
        label, why = audit_label(c, result or None, overfit, rejected.get(c.id))
        node: dict[str, Any] = {
            "id": c.id,
            "label": label,
            "label_why": why,
            "iteration": c.iteration,
            "parents": c.parents,
            "origin": c.origin,
            "plan": c.plan or "",
            "status": status,
            "failure": failure,
            "score": _num(c.score),
            "plan_model": c.plan_model,
            "code_model": c.code_model,
            "translation_score": c.translation_score,
            "code": code,
        }
        if result:
            node["eval"] = {
                "feedback": _cut(result.get("feedback")),
                "status": result.get("status", ""),
                "metric": _num(result.get("metric")),
                "unit": result.get("unit", ""),
                "extra": {k: _num(v) for k, v in (result.get("extra") or {}).items()},
                "stdout": _cut(result.get("stdout")),
                "stderr": _cut(result.get("stderr")),
                "duration_s": result.get("duration_s"),
            }
        elif c.id in rejected:
            node["eval"] = {"feedback": _cut(rejected[c.id])}
        nodes.append(node)
    return nodes, codes


def _iterations(
    stats: dict[int, dict[str, Any]],
    beams: dict[int, list[str]],
    cands: list[Candidate],
    by_id: dict[str, Candidate],
) -> list[dict[str, Any]]:
    """Per finished iteration: the best score, the beam's spread, and every correct
    child's score."""
    children: dict[int, list[float]] = defaultdict(list)
    for c in cands:
        if c.correct:
            children[c.iteration].append(c.score)
    rows = []
    for i, beam in sorted(beams.items()):
        scores = [by_id[cid].score for cid in beam if cid in by_id and by_id[cid].correct]
        if not scores:
            continue
        s = stats.get(i, {})
        rows.append(
            {
                "iteration": i,
                "best": min(scores),
                "beam_worst": max(scores),
                "beam": sorted(scores),
                "children": sorted(children.get(i, [])),
                "candidates": s.get("children"),
                "correct": s.get("correct"),
                "wall_s": s.get("wall_s"),
            }
        )
    return rows


def _failures(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in nodes:
        if n["status"] == "failed":
            groups[n["failure"]].append(n)
    total = sum(len(g) for g in groups.values())
    rows = []
    for kind, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        rows.append(
            {
                "kind": kind,
                "count": len(group),
                "share": len(group) / total,
                "examples": [
                    {"id": n["id"], "text": _first_line(n)} for n in group[:FAILURE_EXAMPLES]
                ],
            }
        )
    return rows


TELLING = re.compile(r"error|exception|expected|mismatch|fail|timed out|killed", re.IGNORECASE)


def _first_line(node: dict[str, Any]) -> str:
    """The line of a failure's text that says most: the first naming an error, else the
    first line."""
    ev = node.get("eval") or {}
    lines = [
        line.strip()
        for text in (ev.get("feedback"), ev.get("stderr"))
        for line in (text or "").splitlines()
        if line.strip()
    ]
    telling = next((line for line in lines if TELLING.search(line)), lines[0] if lines else "")
    return telling[:300]


def _usage_and_timeline(
    store: RunStore, evals: dict[str, dict[str, Any]], finished: dict[str, float]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tokens, cost and latency per phase and model; when LLM calls and evaluations ran,
    how busy each kept the run and how much of that time they overlapped."""
    ledger = UsageLedger()
    llm_spans: list[tuple[float, float]] = []
    for call in store.llm_usage():
        resp = LLMResponse.from_dict(call["response"])
        ledger.record(call["phase"], call["model"], resp)
        llm_spans.append((call["created"] - resp.duration_s, call["created"]))
    eval_spans = [
        (finished[key] - float(result.get("duration_s") or 0.0), finished[key])
        for key, result in evals.items()
        if key in finished
    ]
    usage = ledger.to_dict()
    t0 = min((s for s, _ in llm_spans + eval_spans), default=0.0)
    llm_busy, eval_busy = _union(llm_spans), _union(eval_spans)
    timeline = {
        "llm_in_flight": _concurrency(llm_spans, t0),
        "evaluations_in_flight": _concurrency(eval_spans, t0),
        "llm_busy_s": round(_length(llm_busy), 3),
        "evaluation_busy_s": round(_length(eval_busy), 3),
        "both_busy_s": round(_length(_intersect(llm_busy, eval_busy)), 3),
        "any_busy_s": round(_length(_union(llm_spans + eval_spans)), 3),
    }
    return usage, timeline


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _intersect(
    a: list[tuple[float, float]], b: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in spans)


def _concurrency(spans: list[tuple[float, float]], t0: float) -> list[list[float]]:
    """A step series [seconds since t0, work in flight] with a point at every change."""
    changes: Counter[float] = Counter()
    for start, end in spans:
        changes[round(start - t0, 3)] += 1
        changes[round(end - t0, 3)] -= 1
    level, points = 0, []
    for t in sorted(changes):
        level += changes[t]
        points.append([t, level])
    return points


def run_row(data: dict[str, Any]) -> dict[str, Any]:
    """One line of a list of runs (the dashboard's, a suite's)."""
    return {
        "name": data["name"],
        "backend": data["target"].get("backend"),
        "problem": data["target"].get("problem"),
        "unit": data["target"].get("unit"),
        **{
            k: data["status"][k]
            for k in ("state", "iterations_done", "iterations_total", "updated")
        },
        **{
            k: data["summary"][k]
            for k in (
                "initial_score",
                "best_score",
                "speedup",
                "fraction_of_bound",
                "impossible",
                "candidates",
                "correct",
                "cost_usd",
                "tokens",
                "wall_s",
            )
        },
    }
