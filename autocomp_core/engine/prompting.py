"""Prompt assembly from the core's templates (``prompts/``) and a backend's knowledge pack.

Prompts are split so the static part (architecture, ISA, general rules) leads every
request unchanged and can be cached by the provider; menu dropout, parent code,
plans and feedback go in the dynamic part.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from ..config import SearchConfig
from ..contract.backend import Backend, Example, KnowledgePack, Problem
from ..ledger.store import Candidate
from ..llm.errors import LLMConfigError
from ..llm.modelstring import parse_model_string
from ..llm.types import Prompt
from .translation import Translation


def prompts_dir() -> Path:
    """Templates ship inside the wheel as autocomp_core/prompts; in a checkout they sit at the top."""
    core = Path(__file__).parents[1]
    packaged = core / "prompts"
    return packaged if packaged.is_dir() else core.parent / "prompts"


@cache
def template(name: str) -> string.Template:
    return string.Template((prompts_dir() / f"{name}.md").read_text())


def render(name: str, **values: object) -> str:
    return template(name).substitute(**{k: "" if v is None else v for k, v in values.items()})


def bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def numbered(items: list[str]) -> str:
    return "\n".join(f"{k}. {item}" for k, item in enumerate(items, 1))


def fenced(code: str, language: str) -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def is_local(model: str) -> bool:
    """Whether ``model`` (an alias already resolved) is served by the embedded model."""
    try:
        return parse_model_string(model).provider == "local"
    except LLMConfigError:
        return False


def prompt_pack(pack: KnowledgePack, knowledge: str, models: Sequence[str]) -> KnowledgePack:
    """The pack as prompts carry it (``[prompt] knowledge``): compact keeps the rules and
    menus, the pack's architecture summary where it has one (else the whole architecture),
    and no ISA reference or examples."""
    if knowledge == "auto":
        knowledge = "compact" if models and all(map(is_local, models)) else "full"
    if knowledge != "compact":
        return pack
    architecture = pack.architecture_compact or pack.architecture
    return replace(pack, architecture=architecture, isa="", examples=[])


def system_prompt(backend: Backend) -> str:
    """The system message of every request of a run."""
    return render("system", target=backend.description or backend.name)


class PromptBuilder:
    """Builds every prompt of a run. All randomness comes from the RNG passed in."""

    def __init__(
        self,
        backend: Backend,
        problem: Problem,
        pack: KnowledgePack,
        search: SearchConfig,
        total_iterations: int,
        translation: Translation,
        isa_sections: list | str = "all",
    ) -> None:
        self.backend = backend
        # what context selection kept ("all": the whole ISA; none when prompts carry no ISA)
        self.isa_sections = isa_sections if pack.isa else []
        self.problem = problem
        self.pack = pack
        self.search = search
        self.total_iterations = total_iterations
        self.translation = translation  # the run's own: its end moves when translation ends early
        self.lessons = ""  # what earlier runs on similar problems learned (engine.lessons)
        self.language = backend.language
        rules = [*pack.rules_general, *backend.rules(problem)]
        self.system = system_prompt(backend)
        self.static = render(
            "static",
            target=backend.description or backend.name,
            architecture=pack.architecture,
            isa=pack.isa,
            rules=bullets(rules),
        ).strip()

    # -- pieces -------------------------------------------------------------------------
    def _score_line(self, c: Candidate) -> str:
        unit = self.backend.metric_unit
        return f"Measured {unit or 'metric'}: {c.score:g}" if c.correct else "This program failed."

    def _program_block(self, c: Candidate, title: str, rng: random.Random) -> str:
        parts = [f"## {title}", fenced(c.code or "", self.language)]
        if rng.random() < self.search.score_feedback_probability:
            parts.append(self._score_line(c))
        if c.feedback and rng.random() < self.search.hw_feedback_probability:
            parts.append(f"Hardware feedback:\n{c.feedback}")
        return "\n".join(parts)

    def ancestry(self, chain: list[Candidate], rng: random.Random) -> str:
        """The parent program, or with include_ancestors every step from the original."""
        if not self.search.include_ancestors or len(chain) == 1:
            return self._program_block(chain[-1], "Current program", rng)
        blocks = [self._program_block(chain[0], "Original program", rng)]
        for step, c in enumerate(chain[1:], 1):
            title = "Current program" if c is chain[-1] else f"Step {step}"
            blocks.append(f"## {title}: plan applied\n{c.plan or '(no plan recorded)'}")
            blocks.append(self._program_block(c, f"{title}: program", rng))
        return "\n\n".join(blocks)

    def menu(
        self,
        rng: random.Random,
        translate: bool,
        forced: int | None = None,
        items: list[str] | None = None,
    ) -> str:
        """The numbered menu after dropout; ``items`` replaces the pack's optimization menu
        (a generated menu)."""
        if items is None or translate or forced is not None:
            items = self.pack.translation_menu if translate else self.pack.menu
        if forced is not None:
            return numbered([items[forced]]) + "\nApply exactly this optimization."
        if translate:  # the translation menu is short and never dropped out
            return numbered(items)
        kept = [item for item in items if rng.random() < self.search.menu_keep_probability]
        if not kept and items:
            kept = [rng.choice(items)]
        return numbered(kept)

    def examples(self, text: str, phase: str) -> list[Example]:
        """The pack's examples of this phase whose trigger words occur in ``text``."""
        if not self.search.examples:
            return []
        return [e for e in self.pack.examples if e.phase == phase and e.triggered_by(text)]

    @staticmethod
    def examples_text(examples: list[Example]) -> str:
        return "".join(f"\n## Example: {e.name}\n{e.text.strip()}\n" for e in examples)

    def _iteration_note(self, iteration: int, translate: bool) -> str:
        if translate:
            return (
                f"This is translation phase {iteration} of {self.translation.iterations}: "
                "move the computation onto the target's own kernels and instructions."
            )
        return f"This is optimization phase {iteration} of {self.total_iterations}."

    def _context(self) -> str:
        ctx = self.problem.context.strip()
        return f"{ctx}\n" if ctx else ""

    def _output(self) -> str:
        return render(
            "output_edits" if self.search.edits else "output_full", language=self.language
        )

    def _prompt(self, dynamic: str, examples: Sequence[Example] = ()) -> Prompt:
        context = {"isa": self.isa_sections, "examples": [e.name for e in examples]}
        return Prompt(
            system=self.system, static=self.static, dynamic=dynamic.strip(), context=context
        )

    # -- prompts ------------------------------------------------------------------------
    def plan(
        self,
        chain: list[Candidate],
        rng: random.Random,
        iteration: int,
        translate: bool,
        forced_option: int | None = None,
        menu: list[str] | None = None,
    ) -> Prompt:
        examples = self.examples(chain[-1].code or "", "plan")
        return self._prompt(
            render(
                "plan",
                ancestry=self.ancestry(chain, rng),
                problem_context=self._context(),
                planning_rules=bullets(self.pack.rules_planning),
                lessons=f"\n{self.lessons}" if self.lessons else "",
                menu=self.menu(rng, translate, forced_option, menu),
                examples=self.examples_text(examples),
                iteration_note=self._iteration_note(iteration, translate),
            ),
            examples,
        )

    def implement(
        self, chain: list[Candidate], plan: str, rng: random.Random, iteration: int, translate: bool
    ) -> Prompt:
        examples = self.examples(plan, "code")
        return self._prompt(
            render(
                "implement",
                ancestry=self.ancestry(chain, rng),
                problem_context=self._context(),
                plan=plan,
                examples=self.examples_text(examples),
                coding_rules=bullets(self.pack.rules_coding),
                output_instruction=self._output(),
                iteration_note=self._iteration_note(iteration, translate),
            ),
            examples,
        )

    def direct(
        self,
        chain: list[Candidate],
        rng: random.Random,
        iteration: int,
        translate: bool,
        menu: list[str] | None = None,
    ) -> Prompt:
        examples = self.examples(chain[-1].code or "", "plan")
        return self._prompt(
            render(
                "direct",
                ancestry=self.ancestry(chain, rng),
                problem_context=self._context(),
                menu=self.menu(rng, translate, items=menu),
                examples=self.examples_text(examples),
                coding_rules=bullets(self.pack.rules_coding),
                output_instruction=self._output(),
                iteration_note=self._iteration_note(iteration, translate),
            ),
            examples,
        )

    def new_menu(self, chain: list[Candidate], rng: random.Random, count: int) -> Prompt:
        """Ask for ``count`` optimization strategies for the parent beyond the pack's menu."""
        return self._prompt(
            render(
                "menu",
                ancestry=self.ancestry(chain, rng),
                problem_context=self._context(),
                menu=bullets(self.pack.menu) or "(nothing yet)",
                count=count,
            )
        )

    def repair(self, failed: Candidate, failure: str, errors: str) -> Prompt:
        lines = [line[:400] for line in errors.splitlines()[-80:]]
        return self._prompt(
            render(
                "repair",
                problem_context=self._context(),
                failure=failure,
                plan=failed.plan or "(direct optimization, no plan)",
                language=self.language,
                code=(failed.code or "").rstrip(),
                errors="\n".join(lines) or "(no output)",
                coding_rules=bullets(self.pack.rules_coding),
                output_instruction=self._output(),
            )
        )

    def combine(self, a: Candidate, b: Candidate) -> Prompt:
        return self._prompt(
            render(
                "combine",
                problem_context=self._context(),
                language=self.language,
                code_a=(a.code or "").rstrip(),
                code_b=(b.code or "").rstrip(),
                score_a=self._score_line(a),
                score_b=self._score_line(b),
                coding_rules=bullets(self.pack.rules_coding),
                output_instruction=self._output(),
            )
        )

    def translation_score(self, original: Candidate, candidate: Candidate) -> Prompt:
        return self._prompt(
            render(
                "translation_score",
                language=self.language,
                original=(original.code or "").rstrip(),
                candidate=(candidate.code or "").rstrip(),
            )
        )
