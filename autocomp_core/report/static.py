"""The report's summary as plain HTML, inside the page before any script runs: what text
tools (``chromium --dump-dom``, ``lynx``), screen readers and a browser without
JavaScript see. The page's script replaces it with the full, interactive views.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..numbers import metric_text


def _value(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{metric_text(v)} {unit}".strip()


def _speedup(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"


def _row(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>"


def _run(data: dict[str, Any]) -> str:
    s, t, st = data["summary"], data["target"], data["status"]
    unit = t.get("unit") or ""
    facts = [
        ("run", data["name"]),
        ("status", str(st["state"])),
        ("iterations", f"{st['iterations_done']} / {st['iterations_total']}"),
        ("baseline", _value(s["initial_score"], unit)),
        ("best", _value(s["best_score"], unit)),
        ("speedup", _speedup(s["speedup"])),
        ("lower bound", _value(s["lower_bound"], unit)),
        ("candidates", f"{s['candidates']} ({s['correct']} correct)"),
        (
            "evaluations",
            str(s["evaluations"])
            + (f" ({s['infra_errors']} infra errors)" if s.get("infra_errors") else ""),
        ),
        ("LLM calls", str(s["llm_calls"])),
        ("tokens", str(s["tokens"])),
        ("LLM cost", f"${s['cost_usd']:.4f}"),
        ("wall", f"{s['wall_s']:.1f} s"),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return (
        f'<section class="card"><h1>{escape(str(t.get("backend")))} / '
        f"{escape(str(t.get('problem')))}</h1><dl>{items}</dl></section>"
    )


def _runs(title: str, rows: list[dict[str, Any]]) -> str:
    head = _row(["run", "problem", "status", "candidates", "best", "speedup", "cost"], tag="th")
    body = "".join(
        _row(
            [
                r["name"],
                f"{r['backend']} / {r['problem']}",
                str(r["state"]),
                f"{r['candidates']} ({r['correct']} ok)",
                _value(r["best_score"], r.get("unit") or ""),
                _speedup(r["speedup"]),
                f"${r['cost_usd']:.4f}",
            ]
        )
        for r in rows
    )
    return (
        f'<section class="card"><h1>{escape(title)}</h1><table>'
        f"<thead>{head}</thead><tbody>{body}</tbody></table></section>"
    )


def static_summary(payload: dict[str, Any]) -> str:
    """The summary numbers of a report's payload (one run, or a suite's runs)."""
    if payload["kind"] == "run":
        return _run(payload["runs"][0])
    return _runs(payload["title"], payload["rows"])
