"""Usage and cost aggregated per phase and per model."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .types import LLMResponse


@dataclass
class UsageTotals:
    calls: int = 0
    failures: int = 0
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_sum_s: float = 0.0
    latency_max_s: float = 0.0
    errors: Counter = field(default_factory=Counter)  # error kind -> attempts that failed so

    def add(self, response: LLMResponse) -> None:
        self.calls += 1
        self.failures += 0 if response.ok else 1
        self.attempts += response.attempts
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        self.cached_tokens += response.usage.cached_tokens
        self.cache_write_tokens += response.usage.cache_write_tokens
        self.cost_usd += response.cost_usd
        self.latency_sum_s += response.duration_s
        self.latency_max_s = max(self.latency_max_s, response.duration_s)
        for err in response.errors:
            self.errors[err.kind.value] += 1

    def to_dict(self) -> dict:
        return {
            "calls": self.calls,
            "failures": self.failures,
            "attempts": self.attempts,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "latency_sum_s": round(self.latency_sum_s, 3),
            "latency_max_s": round(self.latency_max_s, 3),
            "errors": dict(self.errors),
        }


class UsageLedger:
    """Every finished call, by phase and model; ``total`` over all."""

    def __init__(self) -> None:
        self.total = UsageTotals()
        self.by_phase: dict[str, dict[str, UsageTotals]] = {}
        self.by_model: dict[str, UsageTotals] = {}

    def record(self, phase: str, model: str, response: LLMResponse) -> None:
        self.total.add(response)
        self.by_phase.setdefault(phase, {}).setdefault(model, UsageTotals()).add(response)
        self.by_model.setdefault(model, UsageTotals()).add(response)

    @property
    def cost_usd(self) -> float:
        return self.total.cost_usd

    @property
    def tokens(self) -> int:
        return self.total.input_tokens + self.total.output_tokens

    def to_dict(self) -> dict:
        return {
            "total": self.total.to_dict(),
            "by_phase": {
                phase: {m: t.to_dict() for m, t in models.items()}
                for phase, models in self.by_phase.items()
            },
            "by_model": {m: t.to_dict() for m, t in self.by_model.items()},
        }
