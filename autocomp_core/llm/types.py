"""Data passed between the engine and the LLM layer."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Prompt:
    """A prompt split so the static part comes first and can be cached by the provider.

    ``static`` holds what is the same across many calls of a run (architecture, ISA,
    rules, menu); ``dynamic`` holds the parent code, plan, feedback and the ask.
    """

    system: str
    static: str
    dynamic: str
    #: what the prompt was built from (ISA sections, examples): journaled, never sent
    context: dict[str, Any] = field(default_factory=dict, compare=False)

    def messages(self) -> list[dict[str, str]]:
        """OpenAI-style messages: one system message, one user message (static + dynamic)."""
        user = f"{self.static}\n\n{self.dynamic}" if self.static else self.dynamic
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


class ResponseFormat(str, enum.Enum):
    TEXT = "text"
    EDITS = "edits"  # structured JSON: {"plan": str, "edits": [{"old_str", "new_str"}]}


@dataclass(frozen=True)
class LLMRequest:
    model: str  # a model string: provider::model, endpoint form, or a configured alias
    prompt: Prompt
    phase: str  # plan, code, direct, repair, combine, translation_score, ...
    sample: int = 0  # sample index; distinct samples of one prompt are distinct requests
    temperature: float | None = 1.0
    max_tokens: int | None = None
    reasoning_effort: str | None = None  # low / medium / high, for reasoning models
    response_format: ResponseFormat = ResponseFormat.TEXT

    def key(self) -> str:
        """Stable hash of model + messages + parameters + sample index (the journal key)."""
        payload = {
            "model": self.model,
            "messages": self.prompt.messages(),
            "sample": self.sample,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
            "response_format": self.response_format.value,
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()


class ErrorKind(str, enum.Enum):
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    AUTHENTICATION = "authentication"
    BAD_REQUEST = "bad_request"
    CONTEXT_LENGTH = "context_length"
    EMPTY = "empty"  # the model answered with no content
    TRUNCATED = "truncated"  # stopped at max tokens
    BUDGET = "budget"  # not sent: a run budget was reached

    @property
    def retryable(self) -> bool:
        return self in {
            ErrorKind.RATE_LIMIT,
            ErrorKind.OVERLOADED,
            ErrorKind.SERVER,
            ErrorKind.TIMEOUT,
            ErrorKind.CONNECTION,
            ErrorKind.EMPTY,
        }


@dataclass
class Usage:
    input_tokens: int = 0  # every input token, cached and cache-written ones included
    output_tokens: int = 0  # thinking included
    cached_tokens: int = 0  # input tokens read from the provider's prompt cache
    cache_write_tokens: int = 0  # input tokens written to it (priced apart where charged)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class LLMError:
    kind: ErrorKind
    message: str
    status: int | None = None


@dataclass
class LLMResponse:
    """One answer, or one failure. A failed response carries no text the engine may use."""

    text: str = ""
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    duration_s: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    error: LLMError | None = None
    errors: list[LLMError] = field(default_factory=list)  # every failed attempt, retried or not

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for err in [data["error"], *data["errors"]]:
            if err:
                err["kind"] = ErrorKind(err["kind"]).value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMResponse:
        def err(e):
            return LLMError(ErrorKind(e["kind"]), e["message"], e.get("status")) if e else None

        return cls(
            text=data.get("text", ""),
            model=data.get("model", ""),
            usage=Usage(**data.get("usage", {})),
            cost_usd=data.get("cost_usd", 0.0),
            duration_s=data.get("duration_s", 0.0),
            attempts=data.get("attempts", 1),
            finish_reason=data.get("finish_reason"),
            error=err(data.get("error")),
            errors=[err(e) for e in data.get("errors", [])],
        )
