"""Markdown cut at its headings: the unit both the pack builder and context selection work in.

Only ATX headings (``#`` .. ``######`` at the start of a line) count, and never inside a
fenced code block, so a ``# comment`` line in a shell or Python example stays where it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass
class MdSection:
    """A heading and the text under it, up to the next heading of the levels cut at."""

    title: str  # the heading's text ("" for the part before the first heading)
    level: int  # 1..6, 0 for the part before the first heading
    text: str  # the section as written, heading line included


def _code_flags(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``text`` and whether it is part of a fenced code block (fences included)."""
    fence = None
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            yield line, True
        elif marker:
            fence = marker.group(1)
            yield line, True
        else:
            yield line, False


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line number, level, title) of every heading outside fenced code."""
    found = []
    for number, (line, code) in enumerate(_code_flags(text)):
        match = None if code else _HEADING.match(line)
        if match:
            found.append((number, len(match.group(1)), match.group(2).strip()))
    return found


def split_sections(text: str, max_level: int = 6) -> list[MdSection]:
    """Cut ``text`` before every heading of level <= ``max_level``; deeper headings stay
    inside their section. Empty parts (no text at all) are left out."""
    lines = text.split("\n")
    cuts = [(n, level, title) for n, level, title in headings(text) if level <= max_level]
    starts = [(0, 0, "")] + cuts if not cuts or cuts[0][0] != 0 else cuts
    sections = []
    for k, (start, level, title) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        body = "\n".join(lines[start:end]).strip("\n")
        if body.strip():
            sections.append(MdSection(title, level, body))
    return sections


def body_of(section: MdSection) -> str:
    """A section's text without its heading line."""
    if section.level == 0:
        return section.text
    return section.text.split("\n", 1)[1] if "\n" in section.text else ""


def blocks(text: str) -> list[str]:
    """Paragraphs: ``text`` cut at blank lines, a fenced code block always kept whole."""
    out: list[str] = []
    current: list[str] = []
    for line, code in _code_flags(text):
        if not code and not line.strip():
            if current:
                out.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out
