"""Turning an LLM's answer into what the search uses: a program, or a judge's score."""

from __future__ import annotations

import re

from ..llm.parsing import EditApplyError, EditParseError, apply_edits, extract_code, parse_edits


def program_from(
    text: str, base: str, edits: bool, language: str, anchor: str | None
) -> tuple[str | None, str]:
    """(the program, "") or (None, why not): ``edits`` applied to ``base``, else (or when
    the answer brought a whole program instead) the fenced code."""
    if edits:
        try:
            return apply_edits(base, parse_edits(text)), ""
        except (EditParseError, EditApplyError) as exc:
            code = extract_code(text, language, anchor)
            if code and code.strip() != text.strip():
                return code, ""
            return None, f"edits could not be applied: {exc}"
    code = extract_code(text, language, anchor)
    return (code, "") if code and code.strip() else (None, "no program found in the response")


def parse_score(text: str) -> float:
    """The first number in a judge's answer, clamped to 0..10; unparsable is 0."""
    m = re.search(r"-?\d+(?:\.\d+)?", text or "")
    return min(10.0, max(0.0, float(m.group()))) if m else 0.0
