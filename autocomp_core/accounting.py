"""Usage accounting and run budgets.

The ledger counts every LLM answer the run used (including answers read back from the
journal on resume: they were paid for) and every evaluation, per phase and per model.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .config import BudgetConfig
from .llm.types import LLMResponse
from .llm.usage import UsageLedger

if TYPE_CHECKING:
    from .store import RunStore


class BudgetReached(Exception):
    """Raised inside the search when a budget stops the run; ``reason`` names it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
        """The usage of the earlier sessions of a journaled run (a run directory, a pack
        build), so totals and budgets span the whole run."""
        ledger = cls(prior_wall_s=store.get_meta("wall_s", 0.0))
        for call in store.llm_calls():
            ledger.add_llm(call["phase"], call["model"], LLMResponse.from_dict(call["response"]),
                           replayed=False)
        ledger.evaluations = store.count("evaluations")
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
            "llm_calls": total["calls"], "llm_failures": total["failures"],
            "llm_replayed": self.llm_replayed, "tokens": self.tokens,
            "input_tokens": total["input_tokens"], "output_tokens": total["output_tokens"],
            "cached_tokens": total["cached_tokens"], "cost_usd": total["cost_usd"],
            "llm_by_phase": usage["by_phase"], "llm_by_model": usage["by_model"],
            "evaluations": self.evaluations, "evaluations_cached": self.evaluations_cached,
            "evaluation_s": round(self.eval_seconds, 3), "wall_s": round(self.wall_s, 3),
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


class Budget:
    """Checks the run's budgets against the ledger before anything is spent."""

    def __init__(self, config: BudgetConfig, ledger: Spending) -> None:
        self.config = config
        self.ledger = ledger

    def check_llm(self) -> None:
        c, led = self.config, self.ledger
        if led.cost_usd >= c.usd:
            raise BudgetReached("budget.usd")
        if c.tokens is not None and led.tokens >= c.tokens:
            raise BudgetReached("budget.tokens")
        if c.llm_calls is not None and led.llm_calls >= c.llm_calls:
            raise BudgetReached("budget.llm_calls")

    def check_evaluation(self) -> None:
        if self.config.evaluations is not None and self.ledger.evaluations >= self.config.evaluations:
            raise BudgetReached("budget.evaluations")
