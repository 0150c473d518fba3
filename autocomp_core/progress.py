"""Progress a person can read: a live panel on a terminal, plain lines otherwise.

The search calls these hooks; counts live here so the display and the summary agree.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from .accounting import Ledger
from .store import Candidate


@dataclass
class Counters:
    plans: int = 0
    plans_failed: int = 0
    codes: int = 0
    codes_failed: int = 0
    evaluations: int = 0
    correct: int = 0


@dataclass
class Progress:
    """Receives events from the search; renders them if ``stream`` is given."""

    ledger: Ledger
    unit: str = ""
    stream: TextIO | None = None
    live: bool = False  # redraw one status line instead of printing lines
    total_iterations: int = 0
    iteration: int = 0
    initial_score: float | None = None
    best_score: float | None = None
    counters: Counters = field(default_factory=Counters)
    _last_draw: float = 0.0

    @classmethod
    def for_terminal(cls, ledger: Ledger, unit: str, total: int, quiet: bool = False) -> Progress:
        stream = None if quiet else sys.stderr
        return cls(ledger=ledger, unit=unit, stream=stream, total_iterations=total,
                   live=bool(stream and stream.isatty()))

    # -- hooks --------------------------------------------------------------------------
    def initial(self, beam: list[Candidate]) -> None:
        self.initial_score = min(c.score for c in beam)
        self.best_score = self.initial_score
        self._line(f"initial program: {self.initial_score:g} {self.unit}")

    def iteration_start(self, i: int, translate: bool, exhaustive: bool) -> None:
        self.iteration = i
        mode = " (translation)" if translate else " (exhaustive menu sweep)" if exhaustive else ""
        self._line(f"iteration {i}/{self.total_iterations}{mode} started")

    def llm_done(self, phase: str, ok: bool) -> None:
        c = self.counters
        if phase == "plan":
            c.plans += ok
            c.plans_failed += not ok
        else:
            c.codes += ok
            c.codes_failed += not ok
        self._redraw()

    def evaluated(self, cand: Candidate) -> None:
        self.counters.evaluations += 1
        self.counters.correct += cand.correct
        if cand.correct and (self.best_score is None or cand.score < self.best_score):
            self.best_score = cand.score
        self._redraw()

    def iteration_done(self, i: int, beam: list[Candidate], resumed: bool = False) -> None:
        self.iteration = i
        best = min(c.score for c in beam)
        if self.best_score is None or best < self.best_score:
            self.best_score = best
        note = " (from the journal)" if resumed else ""
        self._line(f"iteration {i}/{self.total_iterations} done{note}: {self.status()}")

    # -- rendering ----------------------------------------------------------------------
    @property
    def speedup(self) -> float | None:
        if self.initial_score and self.best_score and self.best_score not in (0, float("inf")):
            return self.initial_score / self.best_score
        return None

    def status(self) -> str:
        c = self.counters
        best = f"{self.best_score:g} {self.unit}" if self.best_score is not None else "-"
        speed = f" ({self.speedup:.2f}x)" if self.speedup else ""
        return (f"plans {c.plans} (+{c.plans_failed} failed), codes {c.codes} "
                f"(+{c.codes_failed} failed), evaluations {c.evaluations} ({c.correct} correct), "
                f"best {best}{speed}, tokens {self.ledger.tokens}, ${self.ledger.cost_usd:.4f}")

    def _line(self, text: str) -> None:
        if not self.stream:
            return
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(f"[autocomp] {text}\n")
        self.stream.flush()

    def _redraw(self) -> None:
        if not (self.stream and self.live):
            return
        now = time.monotonic()
        if now - self._last_draw < 0.1:
            return
        self._last_draw = now
        self.stream.write(f"\r\033[K[autocomp] iteration {self.iteration}: {self.status()}"[:400])
        self.stream.flush()
