"""Usage accounting and run budgets.

The ledger counts every LLM answer the run used (including answers read back from the
journal on resume: they were paid for) and every evaluation, per phase and per model.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .config import BudgetConfig
from .llm.types import LLMResponse


class BudgetReached(Exception):
    """Raised inside the search when a budget stops the run; ``reason`` names it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class PhaseModelStats:
    calls: int = 0
    failures: int = 0
    replayed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    max_latency_s: float = 0.0


@dataclass
class Ledger:
    llm: dict[str, dict[str, PhaseModelStats]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(PhaseModelStats)))
    evaluations: int = 0
    evaluations_cached: int = 0
    eval_seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)
    prior_wall_s: float = 0.0  # wall time of earlier sessions of a resumed run

    def add_llm(self, phase: str, model: str, resp: LLMResponse, replayed: bool) -> None:
        s = self.llm[phase][model]
        s.calls += 1
        s.failures += 0 if resp.ok else 1
        s.replayed += int(replayed)
        s.input_tokens += resp.usage.input_tokens
        s.output_tokens += resp.usage.output_tokens
        s.cached_tokens += resp.usage.cached_tokens
        s.cost_usd += resp.cost_usd
        s.latency_s += resp.duration_s
        s.max_latency_s = max(s.max_latency_s, resp.duration_s)

    def _sum(self, attr: str) -> float:
        return sum(getattr(s, attr) for models in self.llm.values() for s in models.values())

    @property
    def tokens(self) -> int:
        return int(self._sum("input_tokens") + self._sum("output_tokens"))

    @property
    def cost_usd(self) -> float:
        return self._sum("cost_usd")

    @property
    def llm_calls(self) -> int:
        return int(self._sum("calls"))

    @property
    def wall_s(self) -> float:
        return self.prior_wall_s + time.monotonic() - self.started

    def to_dict(self) -> dict[str, Any]:
        per_phase = {phase: {model: vars(s).copy() for model, s in models.items()}
                     for phase, models in self.llm.items()}
        per_model: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for models in self.llm.values():
            for model, s in models.items():
                for k, v in vars(s).items():
                    per_model[model][k] = max(per_model[model][k], v) if k.startswith("max") \
                        else per_model[model][k] + v
        return {
            "llm_calls": self.llm_calls, "tokens": self.tokens,
            "input_tokens": int(self._sum("input_tokens")),
            "output_tokens": int(self._sum("output_tokens")),
            "cached_tokens": int(self._sum("cached_tokens")),
            "cost_usd": round(self.cost_usd, 6),
            "llm_by_phase": per_phase, "llm_by_model": {m: dict(v) for m, v in per_model.items()},
            "evaluations": self.evaluations, "evaluations_cached": self.evaluations_cached,
            "evaluation_s": round(self.eval_seconds, 3), "wall_s": round(self.wall_s, 3),
        }


class Budget:
    """Checks the run's budgets against the ledger before anything is spent."""

    def __init__(self, config: BudgetConfig, ledger: Ledger) -> None:
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
