"""Reading the builder's LLM answers: a JSON object, possibly fenced or wrapped in prose."""

from __future__ import annotations

import json
from typing import Any

from ..errors import AutocompError
from ..llm.parsing import extract_plan, fenced_blocks


class BuildError(AutocompError, RuntimeError):
    """The build cannot go on; the message says which stage and why in one line."""


def json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in an answer: the whole text, a fenced block, or the first
    ``{`` that starts a complete object. None when there is none."""
    text = extract_plan(text)  # without reasoning blocks
    candidates = [text.strip()] + [b.body for b in fenced_blocks(text)]
    decoder = json.JSONDecoder(strict=False)
    for candidate in candidates:
        try:
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


def strings(value: Any) -> list[str]:
    """The non-empty strings of a JSON list (anything else in it is ignored)."""
    if not isinstance(value, list):
        return []
    return [" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()]
