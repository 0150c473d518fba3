"""Run-time context selection: when a pack's ISA text (or its examples) is too large to send
whole, an LLM picks the parts that matter for the problem, once per run.

The ISA is cut at its shallowest heading level used more than once (its *sections*); the
text before the first section always stays. With ``[prompt] fine_grained`` a second call
picks *subsections* (the next heading level) inside the chosen sections. Examples are
narrowed the same way. An answer naming nothing valid keeps everything, and says so.

The caller supplies ``ask(prompt, slot)``, which sends one journaled request and returns
its text (or None when the call failed), so a resumed or replayed run gets the same
answers and therefore the same choice.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .backend import Example, KnowledgePack, Problem
from .config import PromptConfig
from .llm.types import Prompt
from .mdsections import MdSection, body_of, headings, split_sections
from .prompting import fenced, render

Ask = Callable[[Prompt, str], Awaitable[str | None]]

PREVIEW_CHARS = 240
PROGRAM_CHARS = 8_000


@dataclass
class Part:
    """One selectable piece of the ISA: a section, possibly with subsections."""

    title: str
    text: str  # heading included
    body: str  # heading left out
    head: str = ""  # fine-grained: the text before the first subsection
    subsections: list[MdSection] = field(default_factory=list)


def section_level(text: str) -> int | None:
    """The shallowest heading level that occurs at least twice (None: nothing to choose)."""
    counts = Counter(level for _, level, _ in headings(text))
    return min((lv for lv, n in counts.items() if n >= 2), default=None)


def isa_parts(isa: str) -> tuple[str, list[Part]]:
    """(text always kept, selectable sections) of an ISA text."""
    level = section_level(isa)
    if level is None:
        return isa, []
    keep, parts = [], []
    for sec in split_sections(isa, max_level=level):
        if sec.level < level:  # the preamble and any title above the sections
            keep.append(sec.text)
            continue
        inner = split_sections(body_of(sec), max_level=level + 1)
        subs = [s for s in inner if s.level == level + 1]
        head = "\n\n".join([sec.text.split("\n", 1)[0]] + [s.text for s in inner
                                                           if s.level != level + 1])
        parts.append(Part(sec.title, sec.text, body_of(sec), head, subs))
    return "\n\n".join(keep), parts


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rsplit(" ", 1)[0] + " ..."


def parse_numbers(answer: str | None, count: int) -> list[int]:
    """The distinct 1-based numbers in ``answer`` that name one of ``count`` items, as
    0-based indexes in the order given."""
    if not answer:
        return []
    seen: list[int] = []
    for token in re.findall(r"\d+", answer):
        k = int(token) - 1
        if 0 <= k < count and k not in seen:
            seen.append(k)
    return seen


def problem_block(problem: Problem, language: str) -> str:
    code = problem.baseline_code
    if len(code) > PROGRAM_CHARS:
        code = code[:PROGRAM_CHARS] + "\n/* ... */"
    lines = [f"Problem: {problem.description}"]
    if problem.context.strip():
        lines.append(problem.context.strip())
    lines += ["", "The program:", fenced(code, language)]
    return "\n".join(lines)


class ContextSelector:
    """Chooses the ISA parts and examples for one problem."""

    def __init__(self, pack: KnowledgePack, problem: Problem, config: PromptConfig,
                 system: str, language: str, ask: Ask) -> None:
        self.pack = pack
        self.config = config
        self.system = system
        self.problem = problem_block(problem, language)
        self.ask = ask

    async def choose(self, what: str, slot: str, listing: list[str]) -> list[int] | None:
        """Indexes of the listed items the LLM keeps; None when its answer names none."""
        numbered = "\n".join(f"{k}. {line}" for k, line in enumerate(listing, 1))
        prompt = Prompt(system=self.system, static="", dynamic=render(
            "select_context", problem=self.problem, what=what, listing=numbered).strip())
        picked = parse_numbers(await self.ask(prompt, slot), len(listing))
        return sorted(picked) if picked else None

    async def select(self) -> tuple[KnowledgePack, dict[str, Any]]:
        """The narrowed pack and a record of what was chosen (for the journal and report)."""
        record: dict[str, Any] = {}
        pack = self.pack
        if len(pack.isa) > self.config.isa_select_above_chars:
            isa, record["isa"] = await self.select_isa()
            pack = replace(pack, isa=isa)
        examples_chars = sum(len(e.text) for e in pack.examples)
        if pack.examples and examples_chars > self.config.examples_select_above_chars:
            examples, record["examples"] = await self.select_examples()
            pack = replace(pack, examples=examples)
        return pack, record

    async def select_isa(self) -> tuple[str, dict[str, Any]]:
        isa = self.pack.isa
        keep, parts = isa_parts(isa)
        record: dict[str, Any] = {"chars_before": len(isa), "sections_total": len(parts)}
        if not parts:
            return isa, {**record, "sections": "all", "chars_after": len(isa),
                         "reason": "the ISA text has no repeated headings to choose between"}
        listing = [f"{p.title} ({len(p.text)} characters): "
                   + (", ".join(s.title for s in p.subsections) or preview(p.body))
                   for p in parts]
        chosen = await self.choose("ISA sections", "isa", listing)
        if chosen is None:
            return isa, {**record, "sections": "all", "chars_after": len(isa),
                         "reason": "the selection named no section; the whole ISA is kept"}
        texts, titles = [keep] if keep.strip() else [], []
        fine = [parts[k] for k in chosen if parts[k].subsections] if self.config.fine_grained \
            else []
        subs_kept = await self.select_subsections(fine) if fine else {}
        for k in chosen:
            part = parts[k]
            if id(part) in subs_kept:
                kept = subs_kept[id(part)]
                texts.append("\n\n".join([part.head] + [s.text for s in kept]))
                titles.append({"section": part.title, "subsections": [s.title for s in kept]})
            else:
                texts.append(part.text)
                titles.append(part.title)
        text = "\n\n".join(texts)
        return text, {**record, "sections": titles, "chars_after": len(text)}

    async def select_subsections(self, parts: list[Part]) -> dict[int, list[MdSection]]:
        """Fine-grained: the subsections kept per section (by ``id(part)``); a section whose
        subsections were all left out keeps them all."""
        flat = [(part, sub) for part in parts for sub in part.subsections]
        listing = [f"{part.title} > {sub.title}: {preview(body_of(sub))}" for part, sub in flat]
        chosen = await self.choose("ISA subsections", "isa-subsections", listing)
        if chosen is None:
            return {}
        kept: dict[int, list[MdSection]] = {}
        for k in chosen:
            part, sub = flat[k]
            kept.setdefault(id(part), []).append(sub)
        return kept

    async def select_examples(self) -> tuple[list[Example], dict[str, Any]]:
        examples = self.pack.examples
        listing = [f"{e.name} ({e.phase} phase; triggered by: {', '.join(e.triggers) or '-'}): "
                   f"{preview(e.text)}" for e in examples]
        chosen = await self.choose("examples", "examples", listing)
        record: dict[str, Any] = {"total": len(examples),
                                  "chars_before": sum(len(e.text) for e in examples)}
        if chosen is None:
            return examples, {**record, "examples": "all", "chars_after": record["chars_before"],
                              "reason": "the selection named no example; all are kept"}
        kept = [examples[k] for k in chosen]
        return kept, {**record, "examples": [e.name for e in kept],
                      "chars_after": sum(len(e.text) for e in kept)}
