"""The parameters each phase's LLM request carries: plans their own effort and token limit,
generation at temperature 1, judges and selections at 0."""

from __future__ import annotations

from autocomp_core.engine.phase_requests import phase_request
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import Prompt, ResponseFormat

PROMPT = Prompt(system="s", static="", dynamic="d")
SETTINGS = LLMSettings(
    max_tokens=400, plan_max_tokens=60, plan_reasoning_effort="high", code_reasoning_effort="low"
)


def test_plans_get_their_own_effort_and_limit_every_other_phase_the_code_settings():
    plan = phase_request(SETTINGS, "m", PROMPT, "plan", 7)
    assert (plan.reasoning_effort, plan.max_tokens, plan.temperature) == ("high", 60, 1.0)
    assert (plan.model, plan.phase, plan.sample, plan.prompt) == ("m", "plan", 7, PROMPT)
    for phase in ("code", "direct", "combine", "repair", "menu", "select_context"):
        request = phase_request(SETTINGS, "m", PROMPT, phase, 7)
        assert (request.reasoning_effort, request.max_tokens) == ("low", 400), phase


def test_a_plan_without_a_limit_of_its_own_gets_the_common_one():
    settings = LLMSettings(max_tokens=400)
    assert phase_request(settings, "m", PROMPT, "plan", 0).max_tokens == 400
    assert phase_request(LLMSettings(), "m", PROMPT, "plan", 0).max_tokens is None


def test_edits_ask_for_the_edits_format_and_judges_for_temperature_zero():
    assert phase_request(SETTINGS, "m", PROMPT, "code", 0).response_format == ResponseFormat.TEXT
    edits = phase_request(SETTINGS, "m", PROMPT, "code", 0, edits=True)
    assert edits.response_format == ResponseFormat.EDITS
    judge = phase_request(SETTINGS, "m", PROMPT, "translation_score", 0, temperature=0.0)
    assert judge.temperature == 0.0
