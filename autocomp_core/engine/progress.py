"""Progress a person can read: a live panel on a terminal, plain lines otherwise.

The search calls the hooks below; the counts live here so the display and the summary
agree. Three ways to show them (``Progress.for_terminal`` picks one):

- ``live``: a rich panel on stderr, redrawn a few times a second (iteration, plans, codes
  and evaluations done and in flight, best score and speedup, tokens, cost, budget used);
  log lines printed meanwhile scroll above it;
- ``lines``: one plain ``[autocomp] ...`` line per event worth a line (not a terminal);
- ``off``: nothing (``--quiet``, or ``--log-json`` where stderr carries JSON lines only).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, Self, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ..config import BudgetConfig
from ..ledger.accounting import Ledger
from ..ledger.store import Candidate
from ..logs import json_lines_enabled
from ..numbers import metric_text

Mode = Literal["live", "lines", "off"]
REFRESH_PER_S = 4


class LiveDisplay:
    """``with`` shows the object (its ``__rich__``) as a live panel when ``mode`` is "live",
    redrawn a few times a second and left on the screen at the end."""

    mode: Mode
    stream: TextIO | None
    _live: Live | None

    def __rich__(self) -> RenderableType:  # what the panel shows
        raise NotImplementedError

    def __enter__(self) -> Self:
        if self.mode == "live" and self._live is None:
            console = Console(file=self.stream, stderr=self.stream is sys.stderr)
            self._live = Live(
                self,
                console=console,
                refresh_per_second=REFRESH_PER_S,
                redirect_stdout=False,
                redirect_stderr=True,
            )
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()  # leaves the last panel on the screen
            self._live = None


class LLMWork(Protocol):
    @property
    def asking(self) -> Mapping[str, int]: ...  # LLM requests in flight, by phase


class EvaluationWork(Protocol):
    @property
    def running(self) -> int: ...
    @property
    def queued(self) -> int: ...
    @property
    def stalled(self) -> str | None: ...  # why evaluations cannot run now (no live node)


@dataclass
class Counters:
    plans: int = 0
    plans_failed: int = 0
    codes: int = 0
    codes_failed: int = 0
    evaluations: int = 0
    correct: int = 0


@dataclass
class Progress(LiveDisplay):
    """Receives events from the search and shows them (see the module docstring)."""

    ledger: Ledger
    unit: str = ""
    mode: Mode = "off"
    stream: TextIO | None = None
    total_iterations: int = 0
    budget: BudgetConfig | None = None
    title: str = ""
    iteration: int = 0
    iterations_done: int = 0
    iteration_note: str = ""
    initial_score: float | None = None
    best_score: float | None = None
    counters: Counters = field(default_factory=Counters)
    _llm: LLMWork | None = None
    _evaluations: EvaluationWork | None = None
    _live: Live | None = None

    @classmethod
    def for_terminal(
        cls,
        ledger: Ledger,
        unit: str,
        total: int,
        quiet: bool = False,
        budget: BudgetConfig | None = None,
        title: str = "",
    ) -> Progress:
        stream = sys.stderr
        if quiet or json_lines_enabled():
            mode: Mode = "off"
        else:
            mode = "live" if stream.isatty() else "lines"
        return cls(
            ledger=ledger,
            unit=unit,
            mode=mode,
            stream=stream,
            total_iterations=total,
            budget=budget,
            title=title,
        )

    def watch(self, llm: LLMWork, evaluations: EvaluationWork) -> None:
        """Where the in-flight counts come from: the LLM door and the evaluator."""
        self._llm, self._evaluations = llm, evaluations

    # -- hooks --------------------------------------------------------------------------
    def initial(self, beam: list[Candidate]) -> None:
        self.initial_score = min(c.score for c in beam)
        self.best_score = self.initial_score
        self._line(f"initial program: {metric_text(self.initial_score)} {self.unit}")

    def iteration_start(self, i: int, translate: bool, exhaustive: bool) -> None:
        self.iteration = i
        self.iteration_note = (
            "translation" if translate else "exhaustive menu sweep" if exhaustive else ""
        )
        note = f" ({self.iteration_note})" if self.iteration_note else ""
        self._line(f"iteration {i}/{self.total_iterations}{note} started")

    def llm_done(self, phase: str, ok: bool) -> None:
        c = self.counters
        if phase == "plan":
            c.plans += ok
            c.plans_failed += not ok
        else:
            c.codes += ok
            c.codes_failed += not ok

    def evaluated(self, cand: Candidate) -> None:
        self.counters.evaluations += 1
        self.counters.correct += cand.correct
        if cand.correct and (self.best_score is None or cand.score < self.best_score):
            self.best_score = cand.score

    def iteration_done(self, i: int, beam: list[Candidate], resumed: bool = False) -> None:
        self.iteration = self.iterations_done = i
        best = min(c.score for c in beam)
        if self.best_score is None or best < self.best_score:
            self.best_score = best
        note = " (from the journal)" if resumed else ""
        self._line(f"iteration {i}/{self.total_iterations} done{note}: {self.status()}")

    # -- what is shown ------------------------------------------------------------------
    @property
    def speedup(self) -> float | None:
        if self.initial_score and self.best_score and self.best_score not in (0, math.inf):
            return self.initial_score / self.best_score
        return None

    def in_flight(self) -> dict[str, int]:
        asking = dict(self._llm.asking) if self._llm else {}
        ev = self._evaluations
        return {
            "plans": asking.get("plan", 0),
            "codes": sum(n for phase, n in asking.items() if phase != "plan"),
            "evaluations": ev.running if ev else 0,
            "queued": ev.queued if ev else 0,
        }

    def stalled(self) -> str | None:
        """Why evaluations cannot run at the moment (and for how long), if they cannot."""
        return self._evaluations.stalled if self._evaluations else None

    def best_text(self) -> str:
        if self.best_score is None or math.isinf(self.best_score):
            return "-"
        speed = f" ({self.speedup:.2f}x)" if self.speedup else ""
        return f"{metric_text(self.best_score)} {self.unit}{speed}"

    def status(self) -> str:
        c = self.counters
        return (
            f"plans {c.plans} (+{c.plans_failed} failed), codes {c.codes} "
            f"(+{c.codes_failed} failed), evaluations {c.evaluations} ({c.correct} correct), "
            f"best {self.best_text()}, tokens {self.ledger.tokens}, "
            f"${self.ledger.cost_usd:.4f}"
        )

    def budget_used(self) -> list[str]:
        """Each budget that is set, as "used of limit (percent)"."""
        b, led = self.budget, self.ledger
        if b is None:
            return []
        pairs = [
            ("$", led.cost_usd, b.usd if math.isfinite(b.usd) else None, ".2f"),
            ("tokens", led.tokens, b.tokens, ",d"),
            ("LLM calls", led.llm_calls, b.llm_calls, ",d"),
            ("evaluations", led.evaluations, b.evaluations, ",d"),
            ("wall s", led.wall_s, b.wall_s, ".0f"),
        ]
        return [
            f"{name} {used:{fmt}} of {limit:{fmt}} ({100 * used / limit:.0f}%)"
            for name, used, limit, fmt in pairs
            if limit
        ]

    def __rich__(self) -> Panel:
        """The live panel (rich calls this on every refresh)."""
        c, flight, led = self.counters, self.in_flight(), self.ledger
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold cyan", no_wrap=True)
        grid.add_column()
        bar = ProgressBar(
            total=max(1, self.total_iterations), completed=self.iterations_done, width=30
        )
        note = f"  ({self.iteration_note})" if self.iteration_note else ""
        grid.add_row(
            "iteration", Group(Text(f"{self.iteration} of {self.total_iterations}{note}"), bar)
        )
        grid.add_row(
            "plans", f"{c.plans} done, {c.plans_failed} failed, {flight['plans']} in flight"
        )
        grid.add_row(
            "codes", f"{c.codes} done, {c.codes_failed} failed, {flight['codes']} in flight"
        )
        grid.add_row(
            "evaluations",
            f"{c.evaluations} done ({c.correct} correct), "
            f"{flight['evaluations']} running, {flight['queued']} queued",
        )
        stalled = self.stalled()
        if stalled:
            grid.add_row(Text("waiting", style="bold red"), Text(stalled, style="red"))
        grid.add_row("best", self.best_text())
        grid.add_row("LLM", f"{led.tokens:,} tokens, ${led.cost_usd:.4f}, {led.llm_calls} calls")
        grid.add_row("elapsed", f"{led.wall_s:.0f} s")
        budget = self.budget_used()
        if budget:
            grid.add_row("budget", "; ".join(budget))
        return Panel(grid, title=f"autocomp {self.title}".strip(), title_align="left", expand=False)

    def _line(self, text: str) -> None:
        if self.mode != "off":
            write_line(self.stream, self._live, text)


def write_line(stream: TextIO | None, live: Live | None, text: str) -> None:
    """One event line: above the live display while there is one, else on the stream."""
    if live is not None:
        live.console.print(f"[autocomp] {text}", markup=False, highlight=False)
    elif stream is not None:
        stream.write(f"[autocomp] {text}\n")
        stream.flush()
