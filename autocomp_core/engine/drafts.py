"""The programs an iteration asks for (``Draft``): their ids, which model writes each, the
sample each request gets, and the prompt it is asked with.

Every id, model and random choice follows from the run's seed and the draft's place in the
iteration (parent, slot), never from timing, so a resumed or replayed run asks the same
requests and finds them in its journal.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import zlib
from dataclasses import dataclass

from ..config import SearchConfig
from ..contract.backend import EvalResult, FailureKind
from ..ledger.store import Candidate, Origin
from ..llm.types import Prompt
from .prompting import PromptBuilder
from .schedule import Stage


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def sample_of(slot_id: str) -> int:
    """The sample index of a request: distinct per slot, so two slots whose prompts happen
    to match still get independent answers (and distinct journal entries)."""
    return zlib.crc32(slot_id.encode())


def assign_model(models: list[str], parent: int, slot: int, slots_per_parent: int) -> str:
    """The one rule that spreads an ensemble's work. An iteration's requests of one kind
    are numbered parent by parent and slot by slot (0, 1, 2, ...) and go to the models in
    turn, so every model gets work as soon as there are as many requests as models."""
    return models[(parent * slots_per_parent + slot) % len(models)]


def next_model(models: list[str], after: str | None) -> str:
    """The model after ``after`` in an ensemble (a repair gets a fresh pair of eyes)."""
    position = models.index(after) + 1 if after in models else 0
    return models[position % len(models)]


def seeded_rng(seed: int, iteration: int, parent: str, slot: str) -> random.Random:
    """Every random choice comes from (seed, iteration, parent, slot), never from timing."""
    digest = hashlib.sha256(f"{seed}|{iteration}|{parent}|{slot}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class Draft:
    """A program to ask for, and the candidate its answer becomes."""

    id: str
    origin: Origin
    phase: str
    model: str
    prompt: Prompt
    parents: list[str]
    base: str  # the program an answer's edits apply to
    plan: str | None = None
    plan_model: str | None = None
    edits: bool = False

    def candidate(self, iteration: int, code: str | None) -> Candidate:
        """The child of ``iteration`` an answer made (``code`` None: no program in it)."""
        return Candidate(
            id=self.id,
            iteration=iteration,
            parents=self.parents,
            origin=self.origin,
            plan=self.plan,
            code=code,
            code_hash=code_hash(code) if code else None,
            plan_model=self.plan_model,
            code_model=self.model,
        )

    @property
    def stages(self) -> tuple[Stage, Stage]:
        """(writing it, evaluating it): a repair's come after every first attempt's."""
        if self.origin == Origin.REPAIR:
            return Stage.REPAIR, Stage.REPAIR_EVAL
        return Stage.CODE, Stage.EVAL


@dataclass
class Drafter:
    """Makes the drafts of a run: one per program the search asks for."""

    prompts: PromptBuilder
    search: SearchConfig
    code_models: list[str]
    seed: int

    def rng(self, iteration: int, parent: str, slot: str) -> random.Random:
        return seeded_rng(self.seed, iteration, parent, slot)

    def implementations(
        self,
        iteration: int,
        translate: bool,
        chain: list[Candidate],
        pi: int,
        label: str,
        slot: int,
        slots: int,
        plan: str,
        plan_model: str,
    ) -> list[Draft]:
        """The ``codes_per_plan`` programs of one plan for the parent that ends ``chain``."""
        parent, per_plan = chain[-1], self.search.codes_per_plan
        drafts = []
        for k in range(per_plan):
            cid = f"i{iteration}-b{pi}-{label}-c{k}"
            rng = self.rng(iteration, parent.id, cid)
            drafts.append(
                Draft(
                    id=cid,
                    origin=Origin.PLAN,
                    phase="code",
                    model=assign_model(self.code_models, pi, slot * per_plan + k, slots * per_plan),
                    prompt=self.prompts.implement(chain, plan, rng, iteration, translate),
                    parents=[parent.id],
                    base=parent.code or "",
                    plan=plan,
                    plan_model=plan_model,
                    edits=self.search.edits,
                )
            )
        return drafts

    def direct(
        self,
        iteration: int,
        translate: bool,
        chain: list[Candidate],
        pi: int,
        slot: int,
        menu: list[str] | None,
    ) -> Draft:
        """A program asked for without a plan: P distinct prompts per parent, C samples of
        each (upstream's shape)."""
        parent = chain[-1]
        per_prompt = self.search.codes_per_plan
        prompt_slot = slot // per_prompt
        rng = self.rng(iteration, parent.id, f"d{prompt_slot}")
        return Draft(
            id=f"i{iteration}-b{pi}-d{slot}",
            origin=Origin.DIRECT,
            phase="direct",
            model=assign_model(
                self.code_models, pi, slot, self.search.plans_per_candidate * per_prompt
            ),
            prompt=self.prompts.direct(chain, rng, iteration, translate, menu),
            parents=[parent.id],
            base=parent.code or "",
            plan=f"direct optimization (prompt {prompt_slot})",
            edits=self.search.edits,
        )

    def combinations(self, iteration: int, beam: list[Candidate]) -> list[Draft]:
        """Programs that combine pairs of beam members (``combine_pairs`` pairs)."""
        if not self.search.combine_pairs or len(beam) < 2:
            return []
        pairs = list(itertools.combinations(range(len(beam)), 2))
        rng = self.rng(iteration, "beam", "combine")
        chosen = rng.sample(pairs, min(self.search.combine_pairs, len(pairs)))
        per_pair = self.search.codes_per_combine
        return [
            Draft(
                id=f"i{iteration}-x{ai}.{bi}-c{k}",
                origin=Origin.COMBINE,
                phase="combine",
                model=assign_model(self.code_models, pair, k, per_pair),
                prompt=self.prompts.combine(beam[ai], beam[bi]),
                parents=[beam[ai].id, beam[bi].id],
                base=beam[ai].code or "",
                plan="combine parents",
            )
            for pair, (ai, bi) in enumerate(chosen)
            for k in range(per_pair)
        ]

    def repair(self, failed: Candidate, result: EvalResult, always: bool = False) -> Draft | None:
        """One repair attempt for a failed first attempt, with its errors (``repair_failed``;
        ``always``: whatever the setting, and of a repair too); None when it gets none."""
        if (
            failed.correct
            or (not always and (failed.origin == Origin.REPAIR or not self.search.repair_failed))
            or not failed.errors.strip()
            or result.failure == FailureKind.INFRA_ERROR
        ):
            return None
        failure = result.failure.value if result.failure else "failed"
        return Draft(
            id=f"{failed.id}-r",
            origin=Origin.REPAIR,
            phase="repair",
            model=next_model(self.code_models, failed.code_model),
            prompt=self.prompts.repair(failed, failure, failed.errors),
            parents=list(failed.parents),
            base=failed.code or "",
            plan=failed.plan,
            plan_model=failed.plan_model,
            edits=self.search.edits,
        )
