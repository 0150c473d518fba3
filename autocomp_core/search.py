"""The pipelined beam search.

One iteration is a task group: every plan starts its implementations the moment it
arrives, every implementation is evaluated the moment it arrives, repairs and
translation scores follow their evaluation. The only barrier is beam selection.
``schedule = "barrier"`` runs the same jobs phase by phase, as the original does.
"""
from __future__ import annotations

import hashlib
import itertools
import random
import re
import time
import zlib
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from .accounting import BudgetReached, Ledger
from .backend import Backend, EvalResult, FailureKind, KnowledgePack, Problem
from .config import RunConfig
from .context import ContextSelector
from .journal import Evaluator, JournaledLLM, ReplayMiss
from .llm.parsing import (
    EditApplyError,
    EditParseError,
    apply_edits,
    extract_code,
    extract_plan,
    parse_edits,
)
from .llm.types import LLMRequest, Prompt, ResponseFormat
from .menus import merge_near_duplicates, parse_items
from .progress import Progress
from .prompting import PromptBuilder
from .selection import exhaustive_now, select_beam, should_early_stop
from .store import Candidate, RunStore

log = structlog.get_logger("autocomp")

# Stages order the jobs of the barrier schedule; the pipelined schedule ignores them.
PLAN, CODE, EVAL, REPAIR, REPAIR_EVAL, SCORE = range(6)


class RunError(Exception):
    """The run cannot start or go on (e.g. the initial program is incorrect)."""


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def sample_of(slot_id: str) -> int:
    """The sample index of a request: distinct per slot, so two slots whose prompts happen
    to match still get independent answers (and distinct journal entries)."""
    return zlib.crc32(slot_id.encode())


@dataclass
class Scheduler:
    """Starts jobs at once (pipelined) or queues them per stage (barrier)."""

    pipelined: bool
    task_group: Any = None
    queues: dict[int, list] = field(default_factory=lambda: defaultdict(list))

    def spawn(self, stage: int, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        if self.pipelined:
            self.task_group.start_soon(fn, *args)
        else:
            self.queues[stage].append((fn, args))

    async def run(self, seed_jobs: Callable[[], None]) -> None:
        if self.pipelined:
            async with anyio.create_task_group() as tg:
                self.task_group = tg
                seed_jobs()
            return
        seed_jobs()
        while any(self.queues.values()):
            stage = min(s for s, q in self.queues.items() if q)
            jobs, self.queues[stage] = self.queues[stage], []
            async with anyio.create_task_group() as tg:
                for fn, args in jobs:
                    tg.start_soon(fn, *args)


class Search:
    """Runs (or resumes) the beam search of one run directory."""

    def __init__(self, config: RunConfig, backend: Backend, problem: Problem,
                 pack: KnowledgePack, store: RunStore, llm: JournaledLLM, evaluator: Evaluator,
                 ledger: Ledger, plan_models: list[str], code_models: list[str],
                 progress: Progress,
                 on_iteration: Callable[[int], None] | None = None) -> None:
        self.cfg = config
        self.s = config.search
        self.backend = backend
        self.problem = problem
        self.pack = pack
        self.store = store
        self.llm = llm
        self.evaluator = evaluator
        self.ledger = ledger
        self.plan_models = plan_models
        self.code_models = code_models
        self.progress = progress
        self.on_iteration = on_iteration  # called once each iteration's beam is saved
        self.translation_iterations = config.translation.iterations
        self.prompts = PromptBuilder(backend, problem, pack, config.search,
                                     config.search.iterations, config.translation.iterations)
        self.cache: dict[str, Candidate] = {}
        self.menus: dict[str, list[str]] = {}  # generated menus by (iteration, parent)
        self.menu_locks: dict[str, anyio.Lock] = {}
        self.losses: list[float] = []
        self.stop_reason: str | None = None

    # -- helpers ------------------------------------------------------------------------
    def rng(self, iteration: int, parent: str, slot: str) -> random.Random:
        """Every random choice comes from (seed, iteration, parent, slot), never from timing."""
        digest = hashlib.sha256(f"{self.cfg.seed}|{iteration}|{parent}|{slot}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def saved(self, cid: str) -> Candidate:
        """A candidate of a saved beam: the journal holds it."""
        c = self.lookup(cid)
        if c is None:
            raise RunError(f"the run's journal lacks candidate {cid} of a saved beam")
        return c

    def lookup(self, cid: str) -> Candidate | None:
        if cid not in self.cache:
            c = self.store.candidate(cid)
            if c is None:
                return None
            self._attach_eval(c)
            self.cache[cid] = c
        return self.cache[cid]

    def _attach_eval(self, c: Candidate) -> None:
        if c.eval_key:
            data = self.store.evaluation(c.eval_key)
            if data:
                c.feedback = data.get("feedback", "")

    def chain(self, c: Candidate) -> list[Candidate]:
        """Root-to-candidate ancestry along first parents."""
        out = [c]
        while out[-1].parents:
            parent = self.lookup(out[-1].parents[0])
            if parent is None:
                break
            out.append(parent)
        return out[::-1]

    def save(self, c: Candidate) -> None:
        self.cache[c.id] = c
        self.store.save_candidate(c)

    def translating(self, iteration: int) -> bool:
        return iteration <= self.translation_iterations

    def keep_factor(self, iteration: int) -> float:
        if self.translating(iteration):
            return self.cfg.translation.regression_allowance
        return self.s.keep_factor if iteration <= self.s.keep_factor_iterations else 1.0

    def request(self, model: str, prompt: Prompt, phase: str, sample: int,
                edits: bool = False, temperature: float | None = 1.0) -> LLMRequest:
        effort = (self.cfg.llm.plan_reasoning_effort if phase == "plan"
                  else self.cfg.llm.code_reasoning_effort)
        return LLMRequest(model=model, prompt=prompt, phase=phase, sample=sample,
                          temperature=temperature, max_tokens=self.cfg.llm.max_tokens,
                          reasoning_effort=effort,
                          response_format=ResponseFormat.EDITS if edits else ResponseFormat.TEXT)

    def materialize(self, text: str, base: str, edits: bool) -> tuple[str | None, str]:
        """Turn a response into a program: apply edits, else extract the fenced code."""
        if edits:
            try:
                return apply_edits(base, parse_edits(text)), ""
            except (EditParseError, EditApplyError) as exc:
                code = extract_code(text, self.backend.language, self.backend.code_anchor)
                if code and code.strip() != text.strip():
                    return code, ""
                return None, f"edits could not be applied: {exc}"
        code = extract_code(text, self.backend.language, self.backend.code_anchor)
        return (code, "") if code and code.strip() else (None, "no program found in the response")

    # -- the run ------------------------------------------------------------------------
    async def run(self) -> list[Candidate]:
        beam = await self.initial_beam()
        try:
            await self.select_context()
        except BudgetReached as exc:
            self.stop_reason = exc.reason
            self.store.event("budget_reached", iteration=0, budget=exc.reason)
            return beam
        except ReplayMiss as exc:
            raise RunError(str(exc)) from None
        self.losses = [min(c.score for c in beam)]
        stats = self.store.iteration_stats()
        for i in range(1, self.s.iterations + 1):
            if should_early_stop(self.losses, i, self.s.early_stop_iterations,
                                 self.s.early_stop_threshold, self.translation_iterations):
                self.stop_reason = "early_stop"
                self.store.event("early_stop", iteration=i)
                break
            saved = self.store.beam(i)
            if saved is not None:  # finished in an earlier session
                beam = [self.saved(cid) for cid in saved]
                self.translation_iterations = stats[i].get("translation_iterations",
                                                           self.translation_iterations)
                self.progress.iteration_done(i, beam, resumed=True)
            else:
                try:
                    beam = await self.iteration(i, beam)
                except* BudgetReached as group:
                    reached = group.exceptions[0]
                    assert isinstance(reached, BudgetReached)  # the first is never a group
                    self.stop_reason = reached.reason
                    self.store.event("budget_reached", iteration=i, budget=self.stop_reason)
                except* ReplayMiss as group:
                    raise RunError(str(group.exceptions[0])) from None
                if self.stop_reason:
                    break
            self.losses.append(min(c.score for c in beam))
        else:
            self.stop_reason = self.stop_reason or "completed"
        return beam

    async def select_context(self) -> None:
        """Narrow a large ISA (and example set) to what this problem needs, once per run: a
        resumed run applies the choice its journal recorded; a replay makes it again from
        the recorded answers."""
        async def ask(prompt: Prompt, slot: str) -> str | None:
            resp = await self.llm.complete(self.request(
                self.plan_models[0], prompt, "select_context", sample=sample_of(slot),
                temperature=0.0))
            return resp.text if resp.ok else None

        selector = ContextSelector(self.pack, self.problem, self.cfg.prompt, self.prompts.system,
                                   self.backend.language, ask)
        record = self.store.get_meta("context_selection")
        if record is not None and record.get("pack") == selector.fingerprint():
            self.pack = selector.apply(record)
        else:
            self.pack, record = await selector.select()
        self.store.set_meta("context_selection", record)
        self.prompts = PromptBuilder(self.backend, self.problem, self.pack, self.s,
                                     self.s.iterations, self.cfg.translation.iterations,
                                     isa_sections=record.get("isa", {}).get("sections", "all"))

    async def menu_for(self, i: int, parent: Candidate, translate: bool,
                       forced: int | None = None) -> list[str] | None:
        """The optimization menu for this parent's prompts; None: the pack's own. Generated
        menus are made once per (iteration, parent) and journaled."""
        if self.s.menu_strategy == "static" or translate or forced is not None:
            return None
        key = f"i{i}-{parent.id}"
        async with self.menu_locks.setdefault(key, anyio.Lock()):
            if key not in self.menus:
                recorded = self.store.get_meta(f"generated_menu/{key}")  # resumed run
                self.menus[key] = recorded if recorded is not None else \
                    await self.generate_menu(i, parent, key)
        new = self.menus[key]
        if self.s.menu_strategy == "mixed":
            return [*self.pack.menu, *new]
        return new or None  # nothing usable was generated: the pack's menu

    async def generate_menu(self, i: int, parent: Candidate, key: str) -> list[str]:
        prompt = self.prompts.new_menu(self.chain(parent), self.rng(i, parent.id, "menu"),
                                       self.s.generated_menu_size)
        sample = sample_of(f"{self.cfg.seed}-menu-{key}")
        model = self.plan_models[sample % len(self.plan_models)]
        resp = await self.llm.complete(self.request(model, prompt, "menu", sample=sample))
        proposed = parse_items(resp.text) if resp.ok else []
        items, repeats = merge_near_duplicates(proposed, existing=self.pack.menu)
        items = items[:self.s.generated_menu_size]
        self.store.set_meta(f"generated_menu/{key}", items)
        self.store.event("generated_menu", iteration=i, parent=parent.id, items=items,
                         repeats=[r for r, _ in repeats], ok=resp.ok)
        return items

    async def initial_beam(self) -> list[Candidate]:
        saved = self.store.beam(0)
        if saved is not None:
            return [self.saved(cid) for cid in saved]
        if self.s.continue_from:
            beam = await self.continued_beam(self.s.continue_from)
        else:
            root = Candidate(id="root", iteration=0, parents=[], origin="root",
                             code=self.problem.baseline_code)
            result = await self.evaluate_into(root)
            if not root.correct:
                detail = (result.feedback or result.stderr or "").strip().splitlines()
                raise RunError(f"the initial program of {self.problem.id} is incorrect "
                               f"({result.failure.value if result.failure else 'failed'})"
                               + (f": {detail[0][:300]}" if detail else ""))
            beam = [root]
        self.store.save_beam(0, [c.id for c in beam], {"best": min(c.score for c in beam)})
        self.progress.initial(beam)
        return beam

    async def continued_beam(self, run_dir: str) -> list[Candidate]:
        """Seed iteration 0 with another run's final beam, ancestry included."""
        if not RunStore.exists(run_dir):
            raise RunError(f"search.continue_from: no run found in {run_dir}")
        other = RunStore(run_dir)
        try:
            last = other.last_iteration()
            ids = other.beam(last) if last is not None else None
            if not ids:
                raise RunError(f"search.continue_from: {run_dir} has no finished beam")
            copied: dict[str, Candidate] = {}
            todo = list(ids)
            while todo:
                cid = todo.pop()
                if cid in copied:
                    continue
                c = other.candidate(cid)
                if c is None:
                    continue
                copied[cid] = c
                todo.extend(c.parents)
        finally:
            other.close()
        for c in copied.values():  # the whole lineage, renamed so ids cannot collide
            c.id, c.parents, c.iteration = f"prev-{c.id}", [f"prev-{p}" for p in c.parents], 0
            c.origin = "root" if c.origin == "root" else c.origin
            self.save(c)
        beam = []
        for cid in ids:
            c = self.cache[f"prev-{cid}"]
            await self.evaluate_into(c)  # re-measured here: hardware or backend may differ
            if c.correct:
                beam.append(c)
        if not beam:
            raise RunError(f"search.continue_from: no program of {run_dir}'s beam is correct here")
        return beam

    async def evaluate_into(self, c: Candidate) -> EvalResult:
        key, result = await self.evaluator.evaluate(c.code or "")
        c.code_hash = code_hash(c.code or "")
        c.eval_key, c.score, c.feedback = key, result.score, result.feedback
        c.errors = "\n".join(x for x in (result.feedback, result.stderr, result.stdout) if x)
        self.save(c)
        self.progress.evaluated(c)
        return result

    # -- one iteration ------------------------------------------------------------------
    async def iteration(self, i: int, beam: list[Candidate]) -> list[Candidate]:
        translate = self.translating(i)
        exhaustive = exhaustive_now(self.losses, i, self.s.exhaustive_first_iterations,
                                    self.s.exhaustive_on_stagnation_iterations,
                                    self.s.exhaustive_stagnation_ratio)
        children: list[Candidate] = []
        started = time.monotonic()
        sched = Scheduler(pipelined=self.s.schedule == "pipelined")
        self.progress.iteration_start(i, translate, exhaustive)

        def seed_jobs() -> None:
            P, C = self.s.plans_per_candidate, self.s.codes_per_plan
            for pi, parent in enumerate(beam):
                if self.s.direct:
                    for slot in range(P * C):
                        model = self.code_models[(pi * P * C + slot) % len(self.code_models)]
                        sched.spawn(CODE, self.direct_job, sched, i, pi, parent, slot, model,
                                    translate, children)
                elif exhaustive:
                    menu = self.pack.translation_menu if translate else self.pack.menu
                    for opt in range(len(menu)):
                        model = self.plan_models[(pi * len(menu) + opt) % len(self.plan_models)]
                        sched.spawn(PLAN, self.plan_job, sched, i, pi, parent, f"m{opt}", opt,
                                    model, translate, children)
                else:
                    for slot in range(P):
                        model = self.plan_models[(pi * P + slot) % len(self.plan_models)]
                        sched.spawn(PLAN, self.plan_job, sched, i, pi, parent, f"p{slot}", None,
                                    model, translate, children)
            if self.s.combine_pairs and len(beam) > 1:
                pairs = list(itertools.combinations(range(len(beam)), 2))
                rng = self.rng(i, "beam", "combine")
                for a, b in rng.sample(pairs, min(self.s.combine_pairs, len(pairs))):
                    for k in range(self.s.codes_per_combine):
                        sched.spawn(CODE, self.combine_job, sched, i, beam[a], beam[b], a, b, k,
                                    translate, children)

        await sched.run(seed_jobs)
        return self.finish_iteration(i, beam, children, translate, time.monotonic() - started)

    def finish_iteration(self, i: int, beam: list[Candidate], children: list[Candidate],
                         translate: bool, wall_s: float) -> list[Candidate]:
        rank_by_translation = translate and self.cfg.translation.score
        new_beam = select_beam(beam, children, beam_size=self.s.beam_size,
                               keep_factor=self.keep_factor(i), lookup=self.lookup,
                               dedup_level=self.s.prevent_duplicate_level,
                               rank_by_translation=rank_by_translation)
        if rank_by_translation and new_beam and i < self.translation_iterations and all(
                (c.translation_score or 0) >= self.cfg.translation.complete_threshold
                for c in new_beam):
            self.store.event("translation_complete", iteration=i)
            self.translation_iterations = i
        if (translate and i == self.translation_iterations and self.cfg.translation.drop_original):
            translated = [c for c in (*beam, *children) if c.origin != "root"]
            kept = select_beam([c for c in beam if c.origin != "root"],
                               [c for c in children if c.origin != "root"],
                               beam_size=self.s.beam_size, keep_factor=self.keep_factor(i),
                               lookup=self.lookup, dedup_level=self.s.prevent_duplicate_level,
                               rank_by_translation=rank_by_translation)
            if kept:
                new_beam = kept
            elif translated:
                self.store.event("drop_original_skipped", iteration=i,
                                 reason="no translated program is correct")
        if not new_beam:  # nothing correct: keep the incumbents
            new_beam = beam
        stats = {"best": min(c.score for c in new_beam), "children": len(children),
                 "wall_s": round(wall_s, 3),
                 "correct": sum(c.correct for c in children),
                 "translation_iterations": self.translation_iterations}
        self.store.save_beam(i, [c.id for c in new_beam], stats)
        if self.on_iteration:
            self.on_iteration(i)
        self.progress.iteration_done(i, new_beam)
        return new_beam

    # -- jobs ---------------------------------------------------------------------------
    async def plan_job(self, sched: Scheduler, i: int, pi: int, parent: Candidate, slot: str,
                       forced: int | None, model: str, translate: bool,
                       children: list[Candidate]) -> None:
        rng = self.rng(i, parent.id, slot)
        menu = await self.menu_for(i, parent, translate, forced)
        prompt = self.prompts.plan(self.chain(parent), rng, i, translate, forced, menu)
        resp = await self.llm.complete(self.request(model, prompt, "plan",
                                                    sample=sample_of(f"i{i}-{parent.id}-{slot}")))
        self.progress.llm_done("plan", resp.ok)
        if not resp.ok:
            return
        plan = extract_plan(resp.text)
        if not plan:
            self.store.event("empty_plan", iteration=i, parent=parent.id, slot=slot)
            return
        for k in range(self.s.codes_per_plan):
            global_slot = (pi * 1000 + int(slot[1:])) * self.s.codes_per_plan + k
            code_model = self.code_models[global_slot % len(self.code_models)]
            cid = f"i{i}-b{pi}-{slot}-c{k}"
            sched.spawn(CODE, self.code_job, sched, i, parent, plan, model, code_model, cid, k,
                        translate, children)

    async def code_job(self, sched: Scheduler, i: int, parent: Candidate, plan: str,
                       plan_model: str, model: str, cid: str, k: int, translate: bool,
                       children: list[Candidate]) -> None:
        rng = self.rng(i, parent.id, cid)
        prompt = self.prompts.implement(self.chain(parent), plan, rng, i, translate)
        resp = await self.llm.complete(self.request(model, prompt, "code", sample=sample_of(cid),
                                                    edits=self.s.edits))
        self.progress.llm_done("code", resp.ok)
        if not resp.ok:
            return
        code, why = self.materialize(resp.text, parent.code or "", self.s.edits)
        c = Candidate(id=cid, iteration=i, parents=[parent.id], origin="plan", plan=plan,
                      code=code, plan_model=plan_model, code_model=model)
        self.add_child(sched, c, why, children, translate)

    async def direct_job(self, sched: Scheduler, i: int, pi: int, parent: Candidate, slot: int,
                         model: str, translate: bool, children: list[Candidate]) -> None:
        # P distinct prompts per parent, C samples of each (the upstream shape)
        prompt_slot = slot // self.s.codes_per_plan
        rng = self.rng(i, parent.id, f"d{prompt_slot}")
        menu = await self.menu_for(i, parent, translate)
        prompt = self.prompts.direct(self.chain(parent), rng, i, translate, menu)
        cid = f"i{i}-b{pi}-d{slot}"
        resp = await self.llm.complete(self.request(model, prompt, "direct",
                                                    sample=sample_of(cid), edits=self.s.edits))
        self.progress.llm_done("code", resp.ok)
        if not resp.ok:
            return
        code, why = self.materialize(resp.text, parent.code or "", self.s.edits)
        c = Candidate(id=cid, iteration=i, parents=[parent.id], origin="direct",
                      plan=f"direct optimization (prompt {prompt_slot})", code=code,
                      code_model=model)
        self.add_child(sched, c, why, children, translate)

    async def combine_job(self, sched: Scheduler, i: int, a: Candidate, b: Candidate, ai: int,
                          bi: int, k: int, translate: bool, children: list[Candidate]) -> None:
        model = self.code_models[(ai * 31 + bi + k) % len(self.code_models)]
        prompt = self.prompts.combine(a, b)
        cid = f"i{i}-x{ai}.{bi}-c{k}"
        resp = await self.llm.complete(self.request(model, prompt, "combine", sample=sample_of(cid)))
        self.progress.llm_done("code", resp.ok)
        if not resp.ok:
            return
        code, why = self.materialize(resp.text, a.code or "", edits=False)
        c = Candidate(id=cid, iteration=i, parents=[a.id, b.id],
                      origin="combine", plan="combine parents", code=code, code_model=model)
        self.add_child(sched, c, why, children, translate)

    async def repair_job(self, sched: Scheduler, i: int, failed: Candidate, failure: str,
                         translate: bool, children: list[Candidate]) -> None:
        cid = f"{failed.id}-r"
        model = self.code_models[sample_of(cid) % len(self.code_models)]
        prompt = self.prompts.repair(failed, failure, failed.errors)
        resp = await self.llm.complete(self.request(model, prompt, "repair", sample=sample_of(cid),
                                                    edits=self.s.edits))
        self.progress.llm_done("code", resp.ok)
        if not resp.ok:
            return
        code, why = self.materialize(resp.text, failed.code or "", self.s.edits)
        c = Candidate(id=cid, iteration=i, parents=list(failed.parents),
                      origin="repair", plan=failed.plan, code=code,
                      plan_model=failed.plan_model, code_model=model)
        self.add_child(sched, c, why, children, translate, repairable=False)

    def add_child(self, sched: Scheduler, c: Candidate, why: str, children: list[Candidate],
                  translate: bool, repairable: bool = True) -> None:
        c.code_hash = code_hash(c.code) if c.code else None
        self.save(c)
        children.append(c)
        if c.code is None:  # nothing to evaluate; not repairable (no program to fix)
            self.store.event("candidate_rejected", candidate=c.id, reason=why)
            self.progress.evaluated(c)
            return
        stage = EVAL if repairable else REPAIR_EVAL
        sched.spawn(stage, self.eval_job, sched, c, translate, repairable, children)

    async def eval_job(self, sched: Scheduler, c: Candidate, translate: bool, repairable: bool,
                       children: list[Candidate]) -> None:
        result = await self.evaluate_into(c)
        if c.correct and translate and self.cfg.translation.score:
            sched.spawn(SCORE, self.score_job, c)
        if (not c.correct and repairable and self.s.repair_failed and c.errors.strip()
                and result.failure != FailureKind.INFRA_ERROR):
            sched.spawn(REPAIR, self.repair_job, sched, c.iteration, c,
                        result.failure.value if result.failure else "failed", translate, children)

    async def score_job(self, c: Candidate) -> None:
        root = self.chain(c)[0]
        prompt = self.prompts.translation_score(root, c)
        resp = await self.llm.complete(self.request(self.plan_models[0], prompt,
                                                    "translation_score", sample=0,
                                                    temperature=0.0))
        c.translation_score = parse_score(resp.text) if resp.ok else 0.0
        self.save(c)


def parse_score(text: str) -> float:
    """The first number in a judge's answer, clamped to 0..10; unparsable is 0."""
    m = re.search(r"-?\d+(?:\.\d+)?", text or "")
    return min(10.0, max(0.0, float(m.group()))) if m else 0.0
