"""What a person watching a suite sees: problems done, running and waiting, the best
speedups so far and what the LLMs cost, as a live panel on a terminal or plain lines.

Each run of the suite keeps its own ``Progress`` (with nothing shown); this reads them."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..engine.progress import LiveDisplay, Mode, Progress, write_line
from ..ledger.accounting import Spending
from ..logs import json_lines_enabled

WAITING, RUNNING = "waiting", "running"
#: problems listed in the live panel: the running ones, then the latest finished
SHOWN = 12


@dataclass
class SuiteProgress(LiveDisplay):
    problems: list[str]
    spending: Spending
    mode: Mode = "off"
    stream: TextIO | None = None
    title: str = ""
    states: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Progress] = field(default_factory=dict)
    _finished: list[str] = field(default_factory=list)
    _live: Live | None = None

    def __post_init__(self) -> None:
        self.states = {p: WAITING for p in self.problems}

    @classmethod
    def for_terminal(
        cls, problems: list[str], spending: Spending, quiet: bool = False, title: str = ""
    ) -> SuiteProgress:
        mode: Mode = (
            "off" if quiet or json_lines_enabled() else "live" if sys.stderr.isatty() else "lines"
        )
        return cls(problems, spending, mode, sys.stderr, title)

    # -- events -------------------------------------------------------------------------
    def started(self, problem: str, progress: Progress) -> None:
        self.states[problem] = RUNNING
        self.runs[problem] = progress
        self._line(f"{problem}: started ({self.counts()})")

    def finished(self, problem: str, stop_reason: str) -> None:
        self.states[problem] = stop_reason
        self._finished.append(problem)
        run = self.runs.get(problem)
        best = f", best {run.best_text()}" if run else ""
        self._line(f"{problem}: {stop_reason}{best} ({self.counts()})")

    # -- what is shown ------------------------------------------------------------------
    def counts(self) -> str:
        running = sum(s == RUNNING for s in self.states.values())
        waiting = sum(s == WAITING for s in self.states.values())
        done = len(self.states) - running - waiting
        return (
            f"{done} done, {running} running, {waiting} waiting; "
            f"{self.spending.tokens:,} tokens, ${self.spending.cost_usd:.4f}"
        )

    def best_speedups(self) -> list[tuple[str, float]]:
        found = [(p, speedup) for p, r in self.runs.items() if (speedup := r.speedup)]
        return sorted(found, key=lambda x: -x[1])

    def __rich__(self) -> Panel:
        table = Table(box=None, padding=(0, 2))
        for column in ("problem", "state", "iteration", "evaluations", "best"):
            table.add_column(column, no_wrap=True)
        running = [p for p, s in self.states.items() if s == RUNNING]
        for problem in (running + self._finished[::-1])[:SHOWN]:
            run = self.runs.get(problem)
            table.add_row(
                problem,
                self.states[problem],
                f"{run.iterations_done}/{run.total_iterations}" if run else "",
                str(run.counters.evaluations) if run else "",
                run.best_text() if run else "",
            )
        top = ", ".join(f"{p} {s:.2f}x" for p, s in self.best_speedups()[:5]) or "-"
        lines = [Text(self.counts()), Text(f"best speedups: {top}")]
        # the runs share one executor: one of them waiting for a node says it for all
        stalled = next((w for r in self.runs.values() if (w := r.stalled())), None)
        if stalled:
            lines.append(Text(f"waiting: {stalled}", style="bold red"))
        return Panel(
            Group(*lines, table),
            title=f"autocomp suite {self.title}".strip(),
            title_align="left",
            expand=False,
        )

    def _line(self, text: str) -> None:
        if self.mode != "off":
            write_line(self.stream, self._live, text)
