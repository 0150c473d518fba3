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

import hashlib
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import PromptConfig
from ..contract.backend import KnowledgePack, Problem
from ..llm.types import Prompt
from ..mdsections import MdSection, body_of, headings, split_sections
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
        head = "\n\n".join(
            [sec.text.split("\n", 1)[0]] + [s.text for s in inner if s.level != level + 1]
        )
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
    """Chooses the ISA parts and examples for one problem.

    A choice is a record of picked indexes (``select``), from which ``apply`` rebuilds the
    narrowed pack; a resumed or replayed run applies the recorded choice again, after
    checking with ``fingerprint`` that it was made for this very pack."""

    def __init__(
        self,
        pack: KnowledgePack,
        problem: Problem,
        config: PromptConfig,
        system: str,
        language: str,
        ask: Ask,
    ) -> None:
        self.pack = pack
        self.config = config
        self.system = system
        self.problem = problem_block(problem, language)
        self.ask = ask

    def fingerprint(self) -> str:
        blob = json.dumps(
            [
                self.pack.isa,
                [[e.name, e.text] for e in self.pack.examples],
                self.config.model_dump(),
            ],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    async def choose(self, what: str, slot: str, listing: list[str]) -> list[int] | None:
        """Indexes of the listed items the LLM keeps; None when its answer names none."""
        numbered = "\n".join(f"{k}. {line}" for k, line in enumerate(listing, 1))
        prompt = Prompt(
            system=self.system,
            static="",
            dynamic=render(
                "select_context", problem=self.problem, what=what, listing=numbered
            ).strip(),
        )
        picked = parse_numbers(await self.ask(prompt, slot), len(listing))
        return sorted(picked) if picked else None

    async def select(self) -> tuple[KnowledgePack, dict[str, Any]]:
        """The narrowed pack and the record of the choice (for the journal and report)."""
        record: dict[str, Any] = {"pack": self.fingerprint()}
        if len(self.pack.isa) > self.config.isa_select_above_chars:
            record["isa"] = await self.pick_isa()
        examples_chars = sum(len(e.text) for e in self.pack.examples)
        if self.pack.examples and examples_chars > self.config.examples_select_above_chars:
            record["examples"] = await self.pick_examples()
        pack = self.apply(record)
        if "isa" in record:
            record["isa"]["sections"] = self.isa_titles(record["isa"]["picked"])
            record["isa"]["chars_after"] = len(pack.isa)
        if "examples" in record:
            picked = record["examples"]["picked"]
            record["examples"]["examples"] = (
                "all" if picked is None else [e.name for e in pack.examples]
            )
            record["examples"]["chars_after"] = sum(len(e.text) for e in pack.examples)
        return pack, record

    async def narrow(self, recorded: dict[str, Any] | None) -> tuple[KnowledgePack, dict[str, Any]]:
        """``select``, unless ``recorded`` is a choice made for this very pack (a resumed
        run), which is applied again; a replay selects again from the recorded answers."""
        if recorded is not None and recorded.get("pack") == self.fingerprint():
            return self.apply(recorded), recorded
        return await self.select()

    def apply(self, record: dict[str, Any]) -> KnowledgePack:
        """The pack narrowed as ``record`` says."""
        pack = self.pack
        picked = record.get("isa", {}).get("picked")
        if picked is not None:
            keep, parts = isa_parts(pack.isa)
            texts = [keep] if keep.strip() else []
            for k, subs in picked:
                part = parts[k]
                texts.append(
                    part.text
                    if subs is None
                    else "\n\n".join([part.head] + [part.subsections[j].text for j in subs])
                )
            pack = replace(pack, isa="\n\n".join(texts))
        picked = record.get("examples", {}).get("picked")
        if picked is not None:
            pack = replace(pack, examples=[pack.examples[k] for k in picked])
        return pack

    def isa_titles(self, picked: list | None) -> list | str:
        if picked is None:
            return "all"
        parts = isa_parts(self.pack.isa)[1]
        return [
            parts[k].title
            if subs is None
            else {
                "section": parts[k].title,
                "subsections": [parts[k].subsections[j].title for j in subs],
            }
            for k, subs in picked
        ]

    async def pick_isa(self) -> dict[str, Any]:
        parts = isa_parts(self.pack.isa)[1]
        record: dict[str, Any] = {"chars_before": len(self.pack.isa), "sections_total": len(parts)}
        if not parts:
            return {
                **record,
                "picked": None,
                "reason": "the ISA text has no repeated headings to choose between",
            }
        listing = [
            f"{p.title} ({len(p.text)} characters): "
            + (", ".join(s.title for s in p.subsections) or preview(p.body))
            for p in parts
        ]
        chosen = await self.choose("ISA sections", "isa", listing)
        if chosen is None:
            return {
                **record,
                "picked": None,
                "reason": "the selection named no section; the whole ISA is kept",
            }
        subs: dict[int, list[int]] = {}
        if self.config.fine_grained:
            flat = [(k, j) for k in chosen for j in range(len(parts[k].subsections))]
            listing = [
                f"{parts[k].title} > {parts[k].subsections[j].title}: "
                f"{preview(body_of(parts[k].subsections[j]))}"
                for k, j in flat
            ]
            # a section none of whose subsections is named keeps them all
            for n in (
                await self.choose("ISA subsections", "isa-subsections", listing) if flat else None
            ) or []:
                subs.setdefault(flat[n][0], []).append(flat[n][1])
        return {**record, "picked": [[k, subs.get(k)] for k in chosen]}

    async def pick_examples(self) -> dict[str, Any]:
        examples = self.pack.examples
        listing = [
            f"{e.name} ({e.phase} phase; triggered by: {', '.join(e.triggers) or '-'}): "
            f"{preview(e.text)}"
            for e in examples
        ]
        chosen = await self.choose("examples", "examples", listing)
        record: dict[str, Any] = {
            "total": len(examples),
            "chars_before": sum(len(e.text) for e in examples),
            "picked": chosen,
        }
        if chosen is None:
            record["reason"] = "the selection named no example; all are kept"
        return record


def isa_sections(record: dict[str, Any]) -> list | str:
    """The ISA sections a choice kept, as prompts record them ("all": the whole ISA)."""
    return record.get("isa", {}).get("sections", "all")
