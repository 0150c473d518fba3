"""Usage accounting and run budgets.

The ledger counts every LLM answer the run used (including answers read back from the
journal on resume: they were paid for) and every evaluation, per phase and per model.

Budgets are checked at the two doors where a run spends, before anything is spent.
``budget.llm_calls`` and ``budget.evaluations`` count what is already in flight, so they
are never exceeded; ``budget.usd``, ``budget.tokens`` and ``budget.wall_s`` stop the run
once reached, and the calls and evaluations already under way then finish and are
journaled (at most ``llm.max_concurrency`` calls and the evaluation slots).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..config import BudgetConfig
from ..llm.types import LLMResponse
from ..llm.usage import UsageLedger

if TYPE_CHECKING:
    from .store import RunStore


class RunStopped(Exception):
    """Raised at a door (an LLM call, an evaluation) when the run must spend no more;
    ``reason`` is the run's stop reason (a config key or a word), ``detail`` one line for a
    person when the reason alone does not say enough. Work already under way finishes."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class BudgetReached(RunStopped):
    """A budget stops the run; ``reason`` names it (``budget.usd``)."""


@dataclass
class Ledger:
    """The run's spending: LLM usage (the LLM layer's ledger) plus evaluations and time."""

    llm: UsageLedger = field(default_factory=UsageLedger)
    llm_replayed: int = 0  # answers taken from another run's journal (replay)
    evaluations: int = 0
    evaluations_cached: int = 0
    eval_seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)
    prior_wall_s: float = 0.0  # wall time of earlier sessions of a resumed run

    @classmethod
    def from_store(cls, store: RunStore) -> Ledger:
        """What earlier sessions of a run spent, read from its journal (usage only, never
        the prompts or the answers' texts), so totals and budgets span the whole run."""
        ledger = cls(prior_wall_s=store.get_meta("wall_s", 0.0))
        for call in store.llm_usage():
            ledger.add_llm(
                call["phase"],
                call["model"],
                LLMResponse.from_dict(call["response"]),
                replayed=False,
            )
        ledger.evaluations = store.evaluations_ended()
        return ledger

    def add_llm(self, phase: str, model: str, resp: LLMResponse, replayed: bool) -> None:
        self.llm.record(phase, model, resp)
        self.llm_replayed += int(replayed)

    @property
    def tokens(self) -> int:
        return self.llm.tokens

    @property
    def cost_usd(self) -> float:
        return self.llm.cost_usd

    @property
    def llm_calls(self) -> int:
        return self.llm.total.calls

    @property
    def wall_s(self) -> float:
        return self.prior_wall_s + time.monotonic() - self.started

    def to_dict(self) -> dict[str, Any]:
        usage = self.llm.to_dict()
        total = usage["total"]
        return {
            "llm_calls": total["calls"],
            "llm_failures": total["failures"],
            "llm_replayed": self.llm_replayed,
            "tokens": self.tokens,
            "input_tokens": total["input_tokens"],
            "output_tokens": total["output_tokens"],
            "cached_tokens": total["cached_tokens"],
            "cost_usd": total["cost_usd"],
            "llm_by_phase": usage["by_phase"],
            "llm_by_model": usage["by_model"],
            "evaluations": self.evaluations,
            "evaluations_cached": self.evaluations_cached,
            "evaluation_s": round(self.eval_seconds, 3),
            "wall_s": round(self.wall_s, 3),
        }


class Spending(Protocol):
    """What budgets are checked against: a run's ledger, or the runs of a suite together."""

    @property
    def cost_usd(self) -> float: ...
    @property
    def tokens(self) -> int: ...
    @property
    def llm_calls(self) -> int: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def wall_s(self) -> float: ...


class Budget:
    """Checks the run's budgets against the ledger before anything is spent."""

    def __init__(self, config: BudgetConfig, ledger: Spending) -> None:
        self.config = config
        self.ledger = ledger
        self.llm_in_flight = 0  # calls admitted and not answered yet

    def check_wall(self) -> None:
        if self.config.wall_s is not None and self.ledger.wall_s >= self.config.wall_s:
            raise BudgetReached("budget.wall_s")

    def check_llm(self) -> None:
        c, led = self.config, self.ledger
        if led.cost_usd >= c.usd:
            raise BudgetReached("budget.usd")
        if c.tokens is not None and led.tokens >= c.tokens:
            raise BudgetReached("budget.tokens")
        if c.llm_calls is not None and led.llm_calls + self.llm_in_flight >= c.llm_calls:
            raise BudgetReached("budget.llm_calls")
        self.check_wall()

    @contextlib.contextmanager
    def llm_call(self) -> Iterator[None]:
        """Admit one LLM call (``BudgetReached`` if a budget says no) and hold its place
        until it is answered and in the ledger."""
        self.check_llm()
        self.llm_in_flight += 1
        try:
            yield
        finally:
            self.llm_in_flight -= 1

    def check_evaluation(self) -> None:
        if (
            self.config.evaluations is not None
            and self.ledger.evaluations >= self.config.evaluations
        ):
            raise BudgetReached("budget.evaluations")
        self.check_wall()
