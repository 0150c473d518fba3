"""Synthesis: the parts of the pack an LLM writes from the routed sections.

- architecture: the architecture sections as written, condensed by the LLM only when
  they are longer than MAX_ARCHITECTURE_CHARS (they go into every prompt);
- menus: optimization strategies (and translation strategies where the documents
  describe porting code onto the target) proposed from the optimization sections,
  near-duplicates merged, topped up until the menu has ``min_items`` distinct items;
- rules: general, planning and coding rules stated by the rules sections;
- examples: each example section as written, named, with trigger words and a phase.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..contract.packs import RULE_KINDS
from ..engine.menus import merge_near_duplicates, parse_items, words
from ..engine.prompting import bullets
from .answers import json_object, strings
from .journal import BuildJournal, gather
from .stages import Section, failed, prompt

MAX_ARCHITECTURE_CHARS = 12_000
CONDENSE_INPUT_CHARS = 60_000
PASSAGE_BATCH_CHARS = 12_000
MORE_MENU_ROUNDS = 3
SUMMARY_CHARS = 4_000


def passage_batches(sections: list[Section], with_ids: bool = False) -> list[str]:
    """The sections as ``## title`` passages, grouped into calls of bounded size."""
    batches: list[list[str]] = [[]]
    size = 0
    for sec in sections:
        text = (
            f"## {sec.id}: {sec.title}\n{sec.text}" if with_ids else f"## {sec.title}\n{sec.text}"
        )
        if batches[-1] and size + len(text) > PASSAGE_BATCH_CHARS:
            batches.append([])
            size = 0
        batches[-1].append(text)
        size += len(text)
    return ["\n\n".join(b) for b in batches if b]


async def _ask_json(
    journal: BuildJournal, item: str, target: str, template: str, **values: object
) -> dict[str, Any]:
    resp = await journal.ask("synthesize", item, prompt(target, template, **values))
    if not resp.ok:
        raise failed("synthesize", item, resp)
    return json_object(resp.text) or {}


async def architecture(
    sections: list[Section], journal: BuildJournal, target: str
) -> dict[str, Any]:
    text = "\n\n".join(s.text for s in sections)
    if len(text) <= MAX_ARCHITECTURE_CHARS:
        return {"text": text, "condensed": False}
    resp = await journal.ask(
        "synthesize",
        "architecture",
        prompt(
            target,
            "pack_condense",
            chars=len(text),
            limit=MAX_ARCHITECTURE_CHARS,
            text=text[:CONDENSE_INPUT_CHARS],
        ),
    )
    if not resp.ok:
        raise failed("synthesize", "architecture", resp)
    return {"text": resp.text.strip(), "condensed": True, "chars_before": len(text)}


def target_summary(architecture_text: str, entries: list[dict[str, str]]) -> str:
    """What the top-up prompt knows of the target: the architecture and the ISA's names."""
    by_category: dict[str, list[str]] = {}
    for e in entries:
        by_category.setdefault(e["category"], []).append(e["name"])
    isa = "\n".join(
        f"- {cat}: {', '.join(n for n in names if n)}" for cat, names in by_category.items()
    )
    return f"{architecture_text[:SUMMARY_CHARS]}\n\nISA entries:\n{isa or '(none)'}"


async def menus(
    sections: list[Section], journal: BuildJournal, target: str, summary: str, min_items: int
) -> dict[str, Any]:
    batches = passage_batches(sections)
    answers = await gather(
        [
            partial(_ask_json, journal, f"menu-{k}", target, "pack_menu", passages=b)
            for k, b in enumerate(batches)
        ]
    )
    proposed = [item for a in answers for item in strings(a.get("optimizations"))]
    translations = [item for a in answers for item in strings(a.get("translations"))]
    menu, merged = merge_near_duplicates(proposed)
    translation_menu, merged_t = merge_near_duplicates(translations)
    rounds = 0
    while len(menu) < min_items and rounds < MORE_MENU_ROUNDS:
        rounds += 1
        count = min_items - len(menu) + max(3, min_items // 4)  # ask for some to spare
        resp = await journal.ask(
            "synthesize",
            f"more-menu-{rounds}",
            prompt(
                target,
                "pack_more_menu",
                summary=summary,
                menu=bullets(menu) or "(nothing yet)",
                count=count,
            ),
        )
        if not resp.ok:
            raise failed("synthesize", f"more menu items (round {rounds})", resp)
        more = parse_items(resp.text)
        proposed += more
        new, repeats = merge_near_duplicates(more, existing=menu)
        menu += new
        merged += repeats
        journal.say(f"synthesize: menu has {len(menu)} distinct items after top-up {rounds}")
        if not new:
            break
    return {
        "menu": menu,
        "translation_menu": translation_menu,
        "proposed": len(proposed),
        "merged": [list(pair) for pair in merged + merged_t],
        "top_up_rounds": rounds,
    }


async def rules(sections: list[Section], journal: BuildJournal, target: str) -> dict[str, Any]:
    batches = passage_batches(sections)
    answers = await gather(
        [
            partial(_ask_json, journal, f"rules-{k}", target, "pack_rules", passages=b)
            for k, b in enumerate(batches)
        ]
    )
    out: dict[str, Any] = {}
    for kind in RULE_KINDS:
        out[kind], _ = merge_near_duplicates([r for a in answers for r in strings(a.get(kind))])
    return out


def _has_code(text: str) -> bool:
    return "```" in text or "~~~" in text


async def examples(
    sections: list[Section], journal: BuildJournal, target: str
) -> list[dict[str, Any]]:
    """Every example section, named; an example the answer skipped is named from its title."""
    batches = passage_batches(sections, with_ids=True)
    answers = await gather(
        [
            partial(_ask_json, journal, f"examples-{k}", target, "pack_examples", passages=b)
            for k, b in enumerate(batches)
        ]
    )
    named: dict[str, dict[str, Any]] = {}
    for answer in answers:
        for item in answer.get("examples") or []:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                named.setdefault(item["id"].strip().lower(), item)
    out = []
    for sec in sections:
        item = named.get(sec.id, {})
        name = " ".join(str(item.get("name") or "").split()) or sec.title.split(" > ")[-1]
        triggers = strings(item.get("triggers")) or sorted(words(sec.title.split(" > ")[-1]))
        phase = (
            item.get("phase")
            if item.get("phase") in ("plan", "code")
            else ("code" if _has_code(sec.text) else "plan")
        )
        out.append(
            {
                "name": name,
                "triggers": triggers,
                "phase": phase,
                "text": sec.text,
                "section": sec.id,
                "named_by": "llm" if item else "title",
            }
        )
    return out
