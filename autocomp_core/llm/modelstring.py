"""Model strings: ``provider::model``, ``provider@base_url::model`` and config aliases.

The model id is everything after the separator and is kept intact, so ids with ``/``
or ``:`` (``meta-llama/Llama-3.1-8B:free``, ``qwen2.5-coder:7b``) survive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import LLMConfigError

SEPARATOR = "::"


@dataclass(frozen=True)
class ModelRef:
    provider: str  # the prefix as written (``vllm``, ``openai-compatible``, ``openai``)
    model: str  # the provider's model id
    endpoint: str | None = None  # base URL given in the string itself

    def __str__(self) -> str:
        at = f"@{self.endpoint}" if self.endpoint else ""
        return f"{self.provider}{at}{SEPARATOR}{self.model}"


def _guess_provider(model: str) -> str | None:
    """Bare model names the original accepted: GPT and o-series -> openai, Claude -> anthropic."""
    if re.match(r"^(gpt-(?!oss)|o\d)", model):
        return "openai"
    if model.startswith("claude"):
        return "anthropic"
    return None


def _split_endpoint(rest: str, text: str) -> tuple[str, str]:
    """Split ``http://host:port/v1::model`` at the ``::`` that follows the URL's host."""
    scheme = rest.find("://")
    if scheme < 0:
        raise LLMConfigError(
            f"model string {text!r}: the endpoint after '@' must be a URL "
            f"such as http://127.0.0.1:8000/v1"
        )
    start = scheme + 3
    if rest.startswith("[", start):  # IPv6 literal, e.g. http://[::1]:8000/v1
        close = rest.find("]", start)
        start = close + 1 if close > 0 else start
    cut = rest.find(SEPARATOR, start)
    if cut < 0:
        raise LLMConfigError(f"model string {text!r}: expected provider@URL::model")
    return rest[:cut], rest[cut + len(SEPARATOR) :]


def parse_model_string(text: str, aliases: dict[str, str] | None = None) -> ModelRef:
    """Resolve aliases (chains allowed, cycles refused) and split the string."""
    aliases = aliases or {}
    seen: list[str] = []
    original = text
    while text in aliases:
        if text in seen:
            raise LLMConfigError(f"model alias cycle: {' -> '.join([*seen, text])}")
        seen.append(text)
        text = aliases[text]
    text = text.strip()
    if not text:
        raise LLMConfigError(f"model string {original!r} is empty")

    head, sep, model = text.partition(SEPARATOR)
    if "@" in head or ("@" in text and not sep):
        provider, _, rest = text.partition("@")
        endpoint, model = _split_endpoint(rest, text)
    elif sep:
        provider, endpoint = head, None
    else:
        guessed = _guess_provider(text)
        if guessed is None:
            raise LLMConfigError(
                f"model string {text!r} has no provider: write provider::model, "
                f"e.g. openai::gpt-5-mini or anthropic::claude-sonnet-4-5"
            )
        provider, endpoint, model = guessed, None, text
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", provider):
        raise LLMConfigError(f"model string {text!r}: bad provider name {provider!r}")
    if not model:
        raise LLMConfigError(f"model string {text!r} has no model id after '::'")
    return ModelRef(
        provider=provider, model=model, endpoint=endpoint.rstrip("/") if endpoint else None
    )
