"""The LLM request each phase of the search sends: the parameters that differ by phase.

Plans get ``plan_reasoning_effort`` and ``plan_max_tokens`` (else ``max_tokens``); every
other phase (code, direct, combine, repair, menu, select_context, translation_score) the
code settings. Generation samples at temperature 1; judges and selections ask for 0.
"""

from __future__ import annotations

from ..llm.settings import LLMSettings
from ..llm.types import LLMRequest, Prompt, ResponseFormat


def phase_request(
    settings: LLMSettings,
    model: str,
    prompt: Prompt,
    phase: str,
    sample: int,
    *,
    edits: bool = False,
    temperature: float | None = 1.0,
) -> LLMRequest:
    planning = phase == "plan"
    return LLMRequest(
        model=model,
        prompt=prompt,
        phase=phase,
        sample=sample,
        temperature=temperature,
        max_tokens=(planning and settings.plan_max_tokens) or settings.max_tokens,
        reasoning_effort=(
            settings.plan_reasoning_effort if planning else settings.code_reasoning_effort
        ),
        response_format=ResponseFormat.EDITS if edits else ResponseFormat.TEXT,
    )
