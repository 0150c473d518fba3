"""Examples checked by a backend (``--backend NAME``): each example's code is evaluated as a
program for one of the backend's problems. One that does not build (a compile error, or
refused before running) gets one repair by the LLM; a repaired program that builds
replaces the example's code, otherwise the example is dropped. Every verdict keeps its
reason. Evaluations go through the journal's evaluator, so a resumed build repeats none.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..contract.backend import Backend, EvalResult, FailureKind, Problem
from ..engine.context import problem_block
from ..engine.journal import Evaluator
from ..llm.parsing import extract_code
from ..numbers import metric_text
from .journal import BuildJournal, gather
from .stages import failed, prompt

NOT_BUILT = {FailureKind.COMPILE_ERROR, FailureKind.REJECTED}
ERROR_LINES = 60


def builds(result: EvalResult) -> bool:
    return result.correct or result.failure not in NOT_BUILT


def failure_of(result: EvalResult) -> str:
    """The failure kind of a result that is not correct (an EvalResult always names one)."""
    assert result.failure is not None, "a correct result has no failure"
    return result.failure.value


def outcome(result: EvalResult) -> str:
    if result.correct:
        return f"builds and is correct ({metric_text(result.metric)} {result.unit})"
    return f"{'builds, then ' if builds(result) else ''}{failure_of(result)}"


def first_line(result: EvalResult) -> str:
    for text in (result.feedback, result.stderr, result.stdout):
        for line in (text or "").splitlines():
            if line.strip():
                return line.strip()[:200]
    return "(no output)"


def errors_of(result: EvalResult) -> str:
    text = "\n".join(t for t in (result.feedback, result.stderr, result.stdout) if t)
    return "\n".join(line[:300] for line in text.splitlines()[-ERROR_LINES:]) or "(no output)"


def with_code(text: str, old: str, new: str, language: str) -> str:
    """The example's text with its program replaced by ``new``."""
    if old.strip() and old.strip() in text:
        return text.replace(old.strip(), new.strip(), 1)
    return f"{text.rstrip()}\n\n```{language}\n{new.strip()}\n```\n"


async def check_examples(
    examples: list[dict[str, Any]],
    backend: Backend,
    problem: Problem,
    evaluator: Evaluator,
    journal: BuildJournal,
    target: str,
) -> dict[str, Any]:
    language = backend.language

    async def check(example: dict[str, Any]) -> dict[str, Any]:
        code = extract_code(example["text"], language, backend.code_anchor)
        if not code or not code.strip():
            return {**example, "check": "kept: no program to build"}
        _, result = await evaluator.evaluate(code)
        journal.say(f"check: example {example['name']!r}: {outcome(result)}")
        if result.failure == FailureKind.INFRA_ERROR:
            return {**example, "check": f"kept unchecked: evaluator error: {first_line(result)}"}
        if builds(result):
            return {**example, "check": f"kept: {outcome(result)}"}
        resp = await journal.ask(
            "check",
            example["section"],
            prompt(
                target,
                "pack_repair",
                problem=problem_block(problem, language),
                code=code,
                errors=errors_of(result),
                language=language,
            ),
        )
        if not resp.ok:
            raise failed("check", f"the repair of example {example['name']!r}", resp)
        repaired = extract_code(resp.text, language, backend.code_anchor)
        why = f"{failure_of(result)}: {first_line(result)}"
        if not repaired:
            return {**example, "dropped": f"does not build ({why}); the repair held no program"}
        _, again = await evaluator.evaluate(repaired)
        journal.say(f"check: repaired example {example['name']!r}: {outcome(again)}")
        if not builds(again):
            return {
                **example,
                "dropped": f"does not build ({why}); repaired once, still "
                f"{failure_of(again)}: {first_line(again)}",
            }
        return {
            **example,
            "text": with_code(example["text"], code, repaired, language),
            "check": f"repaired ({why}); the repair {outcome(again)}",
        }

    verdicts = await gather([partial(check, e) for e in examples])
    return {
        "examples": [v for v in verdicts if "dropped" not in v],
        "dropped": [v for v in verdicts if "dropped" in v],
    }
