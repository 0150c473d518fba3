"""Optimization-menu items: reading them from an LLM answer and merging near-duplicates.

Used where menus are made: the pack builder's synthesis and the search's generated menus
(``search.menu_strategy``). Two items are near-duplicates when, after lower-casing,
dropping filler words and crude stemming, their word sets mostly coincide
("Unroll the loops" ~ "loop unrolling") or their texts are nearly identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

from ..llm.parsing import extract_plan

#: word-set overlap (Jaccard) at or above which two items are the same strategy
SAME_WORDS = 0.75
#: character similarity at or above which two items are the same strategy
SAME_TEXT = 0.9
MAX_ITEM_CHARS = 300

_FILLER = frozenset(
    "a an the to of and or in on for with by into from that this these its it "
    "use using apply make more less when where which as at be is are can "
    "so than then their each every".split()
)
_ITEM_LINE = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|\(\d{1,3}\))\s+(.*\S)\s*$")
_STRATEGIES = re.compile(r"<strategies>(.*?)(?:</strategies>|$)", re.S | re.I)


def _stem(word: str) -> str:
    if len(word) > 4:
        for suffix in ("ings", "ing", "ed", "es", "s"):
            if word.endswith(suffix):
                word = word[: -len(suffix)]
                break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def words(item: str) -> frozenset[str]:
    """The content words of an item, stemmed."""
    tokens = re.findall(r"[a-z0-9_]+", item.lower())
    return frozenset(_stem(t) for t in tokens if t not in _FILLER)


def near_duplicate(a: str, b: str) -> bool:
    wa, wb = words(a), words(b)
    if wa and wb and len(wa & wb) / len(wa | wb) >= SAME_WORDS:
        return True
    na, nb = " ".join(sorted(wa)), " ".join(sorted(wb))
    return SequenceMatcher(None, na, nb).ratio() >= SAME_TEXT


def merge_near_duplicates(
    items: Iterable[str], existing: Iterable[str] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """``items`` without those that repeat an earlier item or one of ``existing``.

    Returns (kept, dropped) where dropped pairs each item left out with the one it repeats.
    The first wording of a strategy wins, so the result does not depend on later items."""
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for item in items:
        item = " ".join(item.split())
        if not item:
            continue
        twin = next((k for k in [*existing, *kept] if near_duplicate(item, k)), None)
        if twin is None:
            kept.append(item)
        else:
            dropped.append((item, twin))
    return kept, dropped


def parse_items(text: str) -> list[str]:
    """Menu items from an answer: the bulleted or numbered lines (inside ``<strategies>``
    tags when the answer has them), markdown emphasis removed."""
    text = extract_plan(text)  # drops reasoning blocks
    tagged = _STRATEGIES.search(text)
    if tagged:
        text = tagged.group(1)
    items = []
    for line in text.splitlines():
        match = _ITEM_LINE.match(line)
        if match:
            item = re.sub(r"[*_`]{1,3}", "", match.group(1)).strip().rstrip(".")
            if item:
                items.append(item[:MAX_ITEM_CHARS])
    return items
