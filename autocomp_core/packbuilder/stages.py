"""The first stages after reading: split into sections, route each section to a category,
extract the ISA entries verbatim."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..engine.prompting import render
from ..llm.types import Prompt
from ..mdsections import blocks, body_of, split_sections
from .answers import BuildError, json_object
from .journal import BuildJournal, gather
from .sources import Document
from .verbatim import VerbatimIndex, normalize

CATEGORIES = ("architecture", "isa", "optimization", "rules", "examples", "irrelevant")
#: a longer section is cut into parts at paragraph boundaries
MAX_SECTION_CHARS = 8_000
#: how much of each section routing sees, and how much goes into one routing call
ROUTE_PREVIEW_CHARS = 1_500
ROUTE_BATCH_CHARS = 12_000


@dataclass
class Section:
    id: str  # s1, s2, ... in reading order
    doc: str
    origin: str
    title: str  # heading trail: "Gemmini ISA > Data movement"
    text: str  # as in the source, heading included

    def to_dict(self) -> dict[str, Any]:
        return vars(self).copy()


def system_prompt(target: str) -> str:
    return render("pack_system", target=target).strip()


def prompt(target: str, template: str, **values: object) -> Prompt:
    return Prompt(
        system=system_prompt(target),
        static="",
        dynamic=render(template, target=target, **values).strip(),
    )


def failed(stage: str, what: str, resp) -> BuildError:
    return BuildError(
        f"{stage}: the LLM call for {what} failed ({resp.error.kind.value}: "
        f"{resp.error.message[:200]}); run the same command again to retry it"
    )


# ---- split ------------------------------------------------------------------------------


def _chunks(text: str) -> list[str]:
    """``text`` in parts of at most MAX_SECTION_CHARS, cut between paragraphs (and between
    lines inside a paragraph that is too long by itself)."""
    if len(text) <= MAX_SECTION_CHARS:
        return [text]
    pieces: list[str] = []
    for block in blocks(text):
        while len(block) > MAX_SECTION_CHARS:
            cut = block.rfind("\n", 0, MAX_SECTION_CHARS)
            cut = cut if cut > 0 else MAX_SECTION_CHARS
            pieces.append(block[:cut])
            block = block[cut:].lstrip("\n")
        pieces.append(block)
    chunks = [""]
    for piece in pieces:
        if chunks[-1] and len(chunks[-1]) + 2 + len(piece) > MAX_SECTION_CHARS:
            chunks.append("")
        chunks[-1] = f"{chunks[-1]}\n\n{piece}" if chunks[-1] else piece
    return chunks


def _doc_sections(doc: Document) -> list[tuple[str, str]]:
    """(heading trail, text) of a document's sections; a heading with nothing under it
    joins the section that follows it."""
    name = Path(urlsplit(doc.origin).path).name or doc.origin
    trail: dict[int, str] = {}
    out, pending, title = [], "", name
    for sec in split_sections(doc.text):
        if sec.level:
            trail = {lv: t for lv, t in trail.items() if lv < sec.level}
            trail[sec.level] = sec.title
        title = " > ".join(trail[lv] for lv in sorted(trail)) or name
        if sec.level and not body_of(sec).strip():
            pending += sec.text + "\n\n"
            continue
        out.append((title, pending + sec.text))
        pending = ""
    if pending.strip():
        out.append((title, pending.strip()))
    return out


def split_documents(docs: list[Document]) -> list[Section]:
    sections: list[Section] = []
    for doc in docs:
        for title, text in _doc_sections(doc):
            parts = _chunks(text)
            for k, part in enumerate(parts):
                label = f"{title} (part {k + 1} of {len(parts)})" if len(parts) > 1 else title
                sections.append(Section(f"s{len(sections) + 1}", doc.id, doc.origin, label, part))
    return sections


# ---- route ------------------------------------------------------------------------------

_ROUTE_LINE = re.compile(r"\b(s\d+)\b\W*[:=\-\u2013\u2014>]+\s*(.+)", re.I)
_SYNONYMS = {
    "instr": "isa",
    "api": "isa",
    "intrinsic": "isa",
    "perf": "optimization",
    "constraint": "rules",
    "example": "examples",
}


def route_batches(sections: list[Section]) -> list[list[Section]]:
    batches: list[list[Section]] = [[]]
    size = 0
    for sec in sections:
        cost = min(len(sec.text), ROUTE_PREVIEW_CHARS)
        if batches[-1] and size + cost > ROUTE_BATCH_CHARS:
            batches.append([])
            size = 0
        batches[-1].append(sec)
        size += cost
    return [b for b in batches if b]


def parse_routes(text: str, ids: set[str]) -> dict[str, list[str]]:
    """``{section id: categories}`` from lines like ``s3: isa, optimization``."""
    routes: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _ROUTE_LINE.search(line.replace("`", "").replace("*", ""))
        if not match or match.group(1).lower() not in ids:
            continue
        found = []
        for word in re.findall(r"[a-z]+", match.group(2).lower()):
            cat = next((c for c in CATEGORIES if word[:4] == c[:4]), None) or next(
                (c for prefix, c in _SYNONYMS.items() if word.startswith(prefix)), None
            )
            if cat and cat not in found:
                found.append(cat)
        if found:
            routes[match.group(1).lower()] = found
    return routes


def _route_listing(batch: list[Section]) -> str:
    parts = []
    for sec in batch:
        preview = sec.text[:ROUTE_PREVIEW_CHARS]
        more = (
            f"\n[... {len(sec.text) - len(preview)} more characters]"
            if len(sec.text) > len(preview)
            else ""
        )
        parts.append(f"## Section {sec.id}: {sec.title} (from {sec.origin})\n{preview}{more}")
    return "\n\n".join(parts)


async def route(sections: list[Section], journal: BuildJournal, target: str) -> dict[str, Any]:
    """Every section's categories; sections the LLM left out even when asked again are
    counted irrelevant and listed as unrouted."""
    batches = route_batches(sections)
    done = 0

    async def ask(batch: list[Section], attempt: str) -> dict[str, list[str]]:
        nonlocal done
        ids = [s.id for s in batch]
        item = f"{attempt}:{ids[0]}-{ids[-1]}:{len(ids)}"
        resp = await journal.ask(
            "route", item, prompt(target, "pack_route", sections=_route_listing(batch))
        )
        if not resp.ok:
            raise failed("route", f"sections {ids[0]}..{ids[-1]}", resp)
        done += 1
        journal.say(f"route: {done} of {len(batches)} batches answered")
        return parse_routes(resp.text, set(ids))

    routes: dict[str, list[str]] = {}
    for found in await gather([partial(ask, b, "first") for b in batches]):
        routes.update(found)
    missing = [s for s in sections if s.id not in routes]
    if missing:
        retry = route_batches(missing)
        batches += retry
        for found in await gather([partial(ask, b, "again") for b in retry]):
            routes.update(found)
    unrouted = [s.id for s in sections if s.id not in routes]
    for sid in unrouted:
        routes[sid] = ["irrelevant"]
    return {"routes": routes, "unrouted": unrouted}


# ---- extract ----------------------------------------------------------------------------


async def extract(
    sections: list[Section], journal: BuildJournal, target: str, index: VerbatimIndex
) -> dict[str, Any]:
    """ISA entries copied from the ISA sections; each one checked against the sources."""
    done = 0

    async def ask(sec: Section) -> tuple[Section, str]:
        nonlocal done
        resp = await journal.ask(
            "extract", sec.id, prompt(target, "pack_extract", title=sec.title, text=sec.text)
        )
        if not resp.ok:
            raise failed("extract", f"section {sec.id}", resp)
        done += 1
        journal.say(f"extract: {done} of {len(sections)} ISA sections answered")
        return sec, resp.text

    accepted: list[dict[str, str]] = []
    refused: list[dict[str, str]] = []
    unreadable: list[str] = []
    seen: set[str] = set()
    for sec, answer in await gather([partial(ask, s) for s in sections]):
        data = json_object(answer)
        if data is None or not isinstance(data.get("entries"), list):
            unreadable.append(sec.id)
            continue
        for item in data["entries"]:
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                continue
            entry = {
                "category": " ".join(str(item.get("category") or "General").split()),
                "name": " ".join(str(item.get("name") or "").split()),
                "text": item["text"].strip(),
                "section": sec.id,
            }
            signature = item.get("signature")
            if isinstance(signature, str) and signature.strip():
                entry["signature"] = " ".join(signature.split())
            verdict = index.check_entry(
                entry["text"], sec.text, entry["name"], entry.get("signature", "")
            )
            if not verdict.ok:
                refused.append({**entry, "reason": verdict.reason})
            elif normalize(entry["text"]) not in seen:
                seen.add(normalize(entry["text"]))
                accepted.append(entry)
    return {"entries": accepted, "refused": refused, "unreadable": unreadable}


def isa_markdown(entries: list[dict[str, str]], target: str) -> str:
    """The ISA text of the pack: ``## category`` sections (in order of first appearance,
    categories that differ only in case merged) holding ``### name`` entries."""
    groups: dict[str, list[dict[str, str]]] = {}
    names: dict[str, str] = {}
    for entry in entries:
        key = entry["category"].lower()
        names.setdefault(key, entry["category"])
        groups.setdefault(key, []).append(entry)
    if not groups:
        return ""
    out = [f"# {target} ISA", "Entries copied word for word from the documentation, by category."]
    for key, items in groups.items():
        out.append(f"## {names[key]}")
        for entry in items:
            heading = entry["name"] or entry["text"].split()[0]
            signature = entry.get("signature")
            if signature and normalize(signature) not in normalize(entry["text"]):
                heading += f"\n`{signature}`"
            out.append(f"### {heading}\n{entry['text']}")
    return "\n\n".join(out) + "\n"
