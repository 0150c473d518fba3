"""Scripted models for end-to-end tests: replies that read the engine's prompts.

``Proposals`` is a responder for ``LLMTestServer`` that plays a model proposing a few
named programs (an honest faster one, a hack, a broken one) so a real run evaluates each:

    respond = Proposals({"fuse the loops": FUSED, "return zeros": ZEROS,
                         "rewrite with a typo": BROKEN}, fallback="rewrite with a typo")
    server = LLMTestServer(respond).start_in_thread()
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..ledger.store import RunStore
from .llm_server import ScriptedRequest


def is_planning(request: ScriptedRequest) -> bool:
    """Whether the request is a planning prompt (it ends by asking for the plan)."""
    return request.prompt.rstrip().endswith("Plan:")


def plan_of(prompt: str) -> str:
    """The first line of the plan an implementation prompt carries, or ''."""
    return prompt.split("## Plan\n", 1)[1].split("\n", 1)[0] if "## Plan\n" in prompt else ""


def fenced(code: str, language: str = "python") -> str:
    return f"```{language}\n{code}```\n"


class Proposals:
    """Each planning request names one of ``programs``, chosen by the request's seed (so
    the plans of one parent differ); each implementation request answers the program its
    plan names, or the ``fallback`` program when the plan names none."""

    def __init__(
        self, programs: Mapping[str, str], *, fallback: str, language: str = "python"
    ) -> None:
        if fallback not in programs:
            raise ValueError(f"fallback {fallback!r} is not one of the programs")
        self.programs = dict(programs)
        self.fallback = fallback
        self.language = language

    def __call__(self, request: ScriptedRequest) -> str:
        names = list(self.programs)
        if is_planning(request):
            return names[(request.params.get("seed") or 0) % len(names)]
        plan = plan_of(request.prompt)
        name = next((n for n in names if n in plan), self.fallback)
        return fenced(self.programs[name], self.language)

    def verdicts(self, run_dir: Path) -> dict[str, tuple[bool, str]]:
        """How the run judged each program it evaluated: name -> (correct, the first line
        of the feedback). The starting program is left out."""
        store = RunStore(run_dir)
        try:
            found = {}
            for cand in store.candidates():
                if cand.origin == "root" or not cand.eval_key:
                    continue
                name = next(
                    n
                    for n, code in self.programs.items()
                    if code.strip() == (cand.code or "").strip()
                )
                result = store.evaluation(cand.eval_key)
                if result is not None:
                    found[name] = (result["correct"], result["feedback"].splitlines()[0])
            return found
        finally:
            store.close()
