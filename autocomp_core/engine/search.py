"""The beam search: each iteration plans, implements, evaluates and selects.

Each parent of the beam is one coroutine (``grow``): its plans, then each plan's programs;
each program is evaluated the moment it is written, then a failed one may get a repair and
a translated one a completeness score. The only barrier is beam selection at the end.
``schedule = "barrier"`` runs the same code stage by stage, as the original does: the work
awaits a gate before each stage (``schedule.Gate``).

The search spends only through two doors: ``JournaledLLM`` (every LLM call) and
``Evaluator`` (every evaluation). When a budget is reached a door refuses
(``RunStopped``): no work passes its next gate, the work under way finishes (its answers
and measurements are journaled), and the unfinished iteration is left for ``resume``.

Reading order: ``Search.run`` → ``iteration`` → ``grow`` → ``plan_then_implement`` (or
``direct``) → ``produce`` (write, evaluate, then repair or score) → ``select``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import structlog

from ..config import RunConfig
from ..contract.backend import Backend, EvalResult, KnowledgePack, Problem
from ..ledger.accounting import RunStopped
from ..ledger.playbook import default_path
from ..ledger.store import Candidate, RunStore, best_candidate
from ..llm.parsing import extract_plan
from ..llm.types import LLMResponse, Prompt
from .answers import parse_score, program_from
from .context import ContextSelector, isa_sections
from .drafts import Draft, Drafter, assign_model, code_hash, sample_of
from .generated_menus import GeneratedMenus
from .held_out import HeldOut
from .initial_beam import initial_beam
from .journal import Evaluator, JournaledLLM
from .lessons import retrieve
from .lineage import Lineage
from .phase_requests import phase_request
from .progress import Progress
from .prompting import PromptBuilder, system_prompt
from .reuse import apply_schedule, donor_schedules
from .schedule import Gate, Stage, first_error
from .selection import exhaustive_now, next_beam, should_early_stop
from .translation import Translation

__all__ = ["RunSetup", "Search"]

log = structlog.get_logger("autocomp")


@dataclass
class RunSetup:
    """What a run optimizes, and with which models."""

    config: RunConfig
    backend: Backend
    problem: Problem
    pack: KnowledgePack
    plan_models: list[str]
    code_models: list[str]


@dataclass
class Iteration:
    """One iteration under way: what its work starts from and adds to."""

    number: int
    beam: list[Candidate]
    translate: bool
    exhaustive: bool
    gate: Gate
    children: list[Candidate] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


class IterationPool(Protocol):
    """One run's door to the iterations a suite's runs left unused (``suite.IterationPool``):
    it tells its headroom, gives back what it will not use, and asks for one more."""

    def headroom(self, value: float | None) -> None: ...
    def release(self, iterations: int) -> None: ...
    def grant(self) -> bool: ...
    def leave(self) -> None: ...


class Search:
    """Runs (or resumes) the beam search of one run directory."""

    prompts: PromptBuilder  # built once the context is selected (``select_context``)
    drafts: Drafter  # ... and the drafts asked with them

    def __init__(
        self,
        setup: RunSetup,
        store: RunStore,
        llm: JournaledLLM,
        evaluator: Evaluator,
        progress: Progress,
        on_iteration: Callable[[int], None] | None = None,
    ) -> None:
        self.cfg = setup.config
        self.s = setup.config.search
        self.backend = setup.backend
        self.problem = setup.problem
        self.pack = setup.pack
        self.plan_models = setup.plan_models
        self.code_models = setup.code_models
        self.store = store
        self.llm = llm
        self.evaluator = evaluator
        self.progress = progress
        self.on_iteration = on_iteration  # called once each iteration's beam is saved
        self.lineage = Lineage(store)
        self.translation = Translation.of(self.cfg.translation)
        self.menus = GeneratedMenus(self.s, setup.pack.menu, store)
        self.held_out = HeldOut(evaluator, store, self.s.held_out)
        #: a suite's pool of iterations that runs stopped at the bound did not use
        self.pool: IterationPool | None = None
        self.granted: int = store.get_meta("granted_iterations", 0) or 0
        self.losses: list[float] = []
        self.stop_reason: str | None = None
        self.stop_detail = ""  # the stop reason in one line for a person, when it needs one

    # -- the run ------------------------------------------------------------------------
    async def run(self) -> list[Candidate]:
        """The final beam; ``stop_reason`` says why the run ended."""
        try:
            beam = await self.initial_beam()
            await self.select_context()
            beam = await self.reused(beam)
        except RunStopped as stop:
            return self.stopped(stop.reason, 0, self.saved_beam(0) or [], stop.detail)
        self.losses = [min(c.score for c in beam)]
        stats = self.store.iteration_stats()
        i = 0
        while (i := i + 1) <= self.s.iterations + self.granted or self.one_more(i):
            reached = self.reached_bound(beam)
            if reached:
                if self.pool is not None:  # what it does not use, a suite gives to others
                    self.pool.release(self.s.iterations + self.granted - (i - 1))
                return await self.settled(self.stopped("stop_at_bound", i - 1, beam, reached))
            if should_early_stop(
                self.losses,
                i,
                self.s.early_stop_iterations,
                self.s.early_stop_threshold,
                self.translation.iterations,
            ):
                self.stop_reason = "early_stop"
                self.store.event("early_stop", iteration=i)
                return await self.settled(beam)
            saved = self.saved_beam(i)
            if saved is not None:  # finished in an earlier session
                beam = saved
                self.translation.iterations = stats[i].get(
                    "translation_iterations", self.translation.iterations
                )
                self.progress.iteration_done(i, beam, resumed=True)
            else:
                it = await self.iteration(i, beam)
                if it.gate.stop is not None:
                    return self.stopped(it.gate.stop.reason, i, beam, it.gate.stop.detail)
                beam = await self.select(it)
            self.losses.append(min(c.score for c in beam))
            if self.pool is not None:
                self.pool.headroom(self.headroom(beam))
        reached = self.reached_bound(beam)
        if reached:
            return await self.settled(self.stopped("stop_at_bound", i - 1, beam, reached))
        self.stop_reason = "completed"
        return await self.settled(beam)

    def one_more(self, i: int) -> bool:
        """Whether a suite's pool grants this run iteration ``i`` beyond its own (journaled,
        so a resumed run runs it again)."""
        if self.pool is None or not self.pool.grant():
            return False
        self.granted += 1
        self.store.set_meta("granted_iterations", self.granted)
        self.store.event("iteration_granted", iteration=i)
        return True

    def headroom(self, beam: list[Candidate]) -> float | None:
        """log(best / lower bound): how far the run is from the speed of light (None: the
        backend gives no bound)."""
        bound = self.backend.metric_lower_bound(self.problem)
        best = min(c.score for c in beam)
        if not bound or bound <= 0 or not math.isfinite(best) or best <= 0:
            return None
        return math.log(best / bound)

    async def settled(self, beam: list[Candidate]) -> list[Candidate]:
        """``beam``, once the program the run will report as its best has passed the
        held-out check (``held_out.settle_best``)."""
        drop_root = self.translation.drop_root
        await self.held_out.settle_best(
            lambda overfit: best_candidate(self.store.candidates(), drop_root, overfit)
        )
        return beam

    def reached_bound(self, beam: list[Candidate]) -> str:
        """Why the run may stop at the bound (``search.stop_at_bound``), or ``""``."""
        fraction = self.s.stop_at_bound
        bound = self.backend.metric_lower_bound(self.problem) if fraction else None
        best = min((c.score for c in beam), default=float("inf"))
        if not fraction or not bound or best > bound / fraction:
            return ""
        return (
            f"the best program ({best:g}) reached {bound / best:.0%} of the speed of the "
            f"lower bound ({bound:g}); search.stop_at_bound = {fraction:g}"
        )

    def stopped(
        self, reason: str, iteration: int, beam: list[Candidate], detail: str = ""
    ) -> list[Candidate]:
        self.stop_reason, self.stop_detail = reason, detail
        self.store.event(
            "stopped", iteration=iteration, reason=reason, **({"detail": detail} if detail else {})
        )
        if detail:
            (log.info if reason == "stop_at_bound" else log.warning)(
                "run stopped", reason=reason, detail=detail
            )
        return beam

    def saved_beam(self, i: int) -> list[Candidate] | None:
        saved = self.store.beam(i)
        return None if saved is None else [self.lineage.require(cid) for cid in saved]

    async def initial_beam(self) -> list[Candidate]:
        saved = self.saved_beam(0)
        if saved is not None:
            return saved
        beam = await initial_beam(
            self.problem, self.s.continue_from, self.lineage, self.evaluate_into
        )
        self.store.save_beam(0, [c.id for c in beam], {"best": min(c.score for c in beam)})
        self.progress.initial(beam)
        return beam

    async def reused(self, beam: list[Candidate]) -> list[Candidate]:
        """Beam 0 with the programs the donors' schedules reach (``engine.reuse``), once:
        a resumed run finds the ``reuse`` meta and its saved beam."""
        if not self.s.reuse or self.store.get_meta("reuse") is not None:
            return beam
        schedules = donor_schedules(self.s.reuse, self.backend.name, self.s.reuse_across_backends)
        it = Iteration(0, beam, translate=False, exhaustive=False, gate=Gate(barrier=False))
        records: list[list[dict]] = [[] for _ in schedules]

        async def one(d: int) -> None:
            records[d] = await apply_schedule(self, it, d, schedules[d])

        async with it.gate.fork() as work:
            for d in range(len(schedules)):
                work.start_soon(one, d)
        reached = [c for c in it.children if c.correct]
        ranked = sorted([*beam, *reached], key=lambda c: c.score)
        new_beam = ranked[: max(self.s.beam_size, len(beam))]
        self.store.save_beam(0, [c.id for c in new_beam], {"best": new_beam[0].score})
        self.store.set_meta("reuse", [r for rs in records for r in rs])
        return new_beam

    async def select_context(self) -> None:
        """Narrow a large ISA (and example set) to what this problem needs, once per run (see
        ``ContextSelector.narrow``), then build the run's prompts from the narrowed pack."""

        async def ask(prompt: Prompt, slot: str) -> str | None:
            resp = await self.call("select_context", prompt, sample_of(slot), temperature=0.0)
            return resp.text if resp.ok else None

        selector = ContextSelector(
            self.pack,
            self.problem,
            self.cfg.prompt,
            system_prompt(self.backend),
            self.backend.language,
            ask,
        )
        self.pack, record = await selector.narrow(self.store.get_meta("context_selection"))
        self.store.set_meta("context_selection", record)
        self.prompts = PromptBuilder(
            self.backend,
            self.problem,
            self.pack,
            self.s,
            self.s.iterations,
            self.translation,
            isa_sections=isa_sections(record),
        )
        self.drafts = Drafter(self.prompts, self.s, self.code_models, self.cfg.seed)
        self.prompts.lessons = self.playbook_lessons()

    def playbook_lessons(self) -> str:
        """The planner's section from the playbook, read once per run and journaled."""
        book = self.cfg.playbook
        if not book.enabled:
            return ""
        saved = self.store.get_meta("playbook")
        if saved is None and self.llm.replay_source is not None:  # a replay shows what it did
            saved = self.llm.replay_source.get_meta("playbook") or {"entries": [], "text": ""}
            self.store.set_meta("playbook", saved)
        if saved is None:
            path = Path(book.path).expanduser() if book.path else default_path()
            saved = retrieve(
                path,
                self.backend.name,
                self.problem,
                book.entries,
                book.max_chars,
            )
            self.store.set_meta("playbook", saved)
        return str(saved.get("text", ""))

    # -- one iteration ------------------------------------------------------------------
    async def iteration(self, i: int, beam: list[Candidate]) -> Iteration:
        """Run all the work of iteration ``i``; selection is the caller's."""
        it = Iteration(
            i,
            beam,
            translate=self.translation.active(i),
            exhaustive=exhaustive_now(
                self.losses,
                i,
                self.s.exhaustive_first_iterations,
                self.s.exhaustive_on_stagnation_iterations,
                self.s.exhaustive_stagnation_ratio,
            ),
            gate=Gate(barrier=self.s.schedule != "pipelined"),
        )
        self.progress.iteration_start(i, it.translate, it.exhaustive)
        try:
            async with it.gate.fork() as work:
                for pi, parent in enumerate(beam):
                    work.start_soon(self.grow, it, pi, parent)
                for draft in self.drafts.combinations(i, beam):
                    work.start_soon(self.produce, it, draft)
        except BaseExceptionGroup as group:  # some work failed: the error itself, not a group
            raise first_error(group) from None
        return it

    async def grow(self, it: Iteration, pi: int, parent: Candidate) -> None:
        """One parent's work: its plans (one per menu item in an exhaustive sweep), each
        implemented ``codes_per_plan`` times; or (``direct``) programs without a plan."""
        P, C = self.s.plans_per_candidate, self.s.codes_per_plan
        menu = self.pack.translation_menu if it.translate else self.pack.menu
        async with it.gate.fork() as work:
            if self.s.direct:
                for slot in range(P * C):
                    work.start_soon(self.direct, it, pi, parent, slot)
            elif it.exhaustive:
                for item in range(len(menu)):
                    work.start_soon(self.plan_then_implement, it, pi, parent, item, len(menu), item)
            else:
                for slot in range(P):
                    work.start_soon(self.plan_then_implement, it, pi, parent, slot, P, None)

    async def plan_then_implement(
        self, it: Iteration, pi: int, parent: Candidate, slot: int, slots: int, forced: int | None
    ) -> None:
        """Ask for a plan (``forced``: for this menu item), then for its programs."""
        await it.gate.reach(Stage.PLAN)
        label = f"m{slot}" if forced is not None else f"p{slot}"
        model = assign_model(self.plan_models, pi, slot, slots)
        plan = await self.plan(it, pi, parent, label, model, forced)
        if plan is None:
            return
        chain = self.lineage.chain(parent)
        drafts = self.drafts.implementations(
            it.number, it.translate, chain, pi, label, slot, slots, plan, model
        )
        async with it.gate.fork() as programs:
            for draft in drafts:
                programs.start_soon(self.produce, it, draft)

    async def plan(
        self, it: Iteration, pi: int, parent: Candidate, label: str, model: str, forced: int | None
    ) -> str | None:
        """The plan ``model`` proposes for ``parent``; None when none came."""
        menu = None if forced is not None else await self.menu_for(it, pi, parent)
        rng = self.drafts.rng(it.number, parent.id, label)
        prompt = self.prompts.plan(
            self.lineage.chain(parent), rng, it.number, it.translate, forced, menu
        )
        text = await self.ask(model, prompt, "plan", f"i{it.number}-{parent.id}-{label}")
        if text is None:
            return None
        plan = extract_plan(text)
        if not plan:
            self.store.event("empty_plan", iteration=it.number, parent=parent.id, slot=label)
            return None
        return plan

    async def direct(self, it: Iteration, pi: int, parent: Candidate, slot: int) -> None:
        """No planning step: a program asked for with the menu in its prompt."""
        await it.gate.reach(Stage.CODE)
        menu = await self.menu_for(it, pi, parent)
        chain = self.lineage.chain(parent)
        await self.produce(it, self.drafts.direct(it.number, it.translate, chain, pi, slot, menu))

    async def produce(self, it: Iteration, draft: Draft) -> None:
        """Write a program and evaluate it; then a judge scores a correct translation, or a
        failed program gets its repair."""
        writing, evaluating = draft.stages
        await it.gate.reach(writing)
        c = await self.write(it, draft)
        if c is None:
            return
        await it.gate.reach(evaluating)
        result = await self.evaluate_into(c)
        if c.correct and it.translate and self.cfg.translation.score:
            await it.gate.reach(Stage.SCORE)
            await self.score(c)
        elif (repair := self.drafts.repair(c, result)) is not None:
            await self.produce(it, repair)

    async def write(self, it: Iteration, draft: Draft) -> Candidate | None:
        """Ask for a program and make it a child of the iteration; None when there is
        nothing to evaluate (no answer, or no program in it)."""
        text = await self.ask(draft.model, draft.prompt, draft.phase, draft.id, edits=draft.edits)
        if text is None:
            return None
        language, anchor = self.backend.language, self.backend.code_anchor
        code, why = program_from(text, draft.base, draft.edits, language, anchor)
        c = draft.candidate(it.number, code)
        self.lineage.save(c)
        it.children.append(c)
        if code is None:  # nothing to evaluate, nothing to repair
            self.store.event("candidate_rejected", candidate=c.id, reason=why)
            self.progress.evaluated(c)
            return None
        return c

    async def score(self, c: Candidate) -> None:
        """Translation: an LLM judges how complete the translation is (0-10)."""
        prompt = self.prompts.translation_score(self.lineage.chain(c)[0], c)
        resp = await self.call("translation_score", prompt, 0, temperature=0.0)
        c.translation_score = parse_score(resp.text) if resp.ok else 0.0
        self.lineage.save(c)

    async def menu_for(self, it: Iteration, pi: int, parent: Candidate) -> list[str] | None:
        """The generated menu of this parent's prompts; None: the pack's own."""
        if it.translate:
            return None

        async def ask(key: str) -> LLMResponse:
            chain, rng = self.lineage.chain(parent), self.drafts.rng(it.number, parent.id, "menu")
            prompt = self.prompts.new_menu(chain, rng, self.s.generated_menu_size)
            sample = sample_of(f"{self.cfg.seed}-menu-{key}")
            return await self.call(
                "menu", prompt, sample, model=assign_model(self.plan_models, pi, 0, 1)
            )

        return await self.menus.menu(it.number, parent.id, ask)

    # -- selection ----------------------------------------------------------------------
    async def select(self, it: Iteration) -> list[Candidate]:
        """The next beam (``selection.next_beam``) without the programs that fail the
        held-out check (its best is checked), saved with the iteration's statistics."""
        i, children = it.number, it.children
        new_beam = next_beam(
            i,
            it.beam,
            children,
            search=self.s,
            translation=self.translation,
            lookup=self.lineage.get,
            event=self.store.event,
        )
        new_beam = await self.held_out.screen(new_beam)
        stats = {
            "best": min(c.score for c in new_beam),
            "children": len(children),
            "wall_s": round(time.monotonic() - it.started, 3),
            "correct": sum(c.correct for c in children),
            "translation_iterations": self.translation.iterations,
        }
        self.store.save_beam(i, [c.id for c in new_beam], stats)
        if self.on_iteration:
            self.on_iteration(i)
        self.progress.iteration_done(i, new_beam)
        return new_beam

    # -- the doors ----------------------------------------------------------------------
    async def ask(
        self, model: str, prompt: Prompt, phase: str, slot_id: str, edits: bool = False
    ) -> str | None:
        """One generation call (a plan or a program): the answer, or None when the call
        failed (journaled and counted as a failure)."""
        resp = await self.call(phase, prompt, sample_of(slot_id), model=model, edits=edits)
        self.progress.llm_done(phase, resp.ok)
        return resp.text if resp.ok else None

    async def evaluate_into(self, c: Candidate) -> EvalResult:
        key, result = await self.evaluator.evaluate(c.code or "")
        c.code_hash = code_hash(c.code or "")
        c.eval_key, c.score, c.feedback = key, result.score, result.feedback
        c.errors = "\n".join(x for x in (result.feedback, result.stderr, result.stdout) if x)
        self.lineage.save(c)
        self.progress.evaluated(c)
        return result

    async def call(
        self, phase: str, prompt: Prompt, sample: int, model: str | None = None, **params: Any
    ) -> LLMResponse:
        """Every LLM call of the search, with its phase's parameters (``phase_requests``);
        without ``model``, the first planning model's."""
        request = phase_request(
            self.cfg.llm, model or self.plan_models[0], prompt, phase, sample, **params
        )
        return await self.llm.complete(request)
