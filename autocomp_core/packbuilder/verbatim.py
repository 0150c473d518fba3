"""The verbatim check: an ISA entry is accepted only if its text, its name and its
signature (where it has one) occur in the sources.

The comparison ignores how whitespace is laid out (a PDF's line breaks, an HTML page's
indentation) and the Markdown markup around words (backticks, emphasis, link brackets,
heading and list markers), on both sides: a model that copies a passage without its
backticks has still copied it. Anything else, a changed word, a dropped clause or a
reordered sentence, is a paraphrase and is refused, with the longest stretch that does
match as the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

#: shorter than this, a "match" proves nothing (a bare name occurs everywhere)
MIN_ENTRY_CHARS = 20

_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_LINE_MARKER = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|\d+[.)][ \t]+)", re.M)
#: ``*word*`` / ``_word_`` emphasis: the marker touches a word on its inner side only
#: (so ``a * b`` and ``snake_case_name`` keep their characters)
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")


def strip_markup(text: str) -> str:
    """``text`` without the Markdown markup that does not change what it says."""
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _LINE_MARKER.sub("", text)
    text = text.replace("`", "").replace("**", "").replace("__", "")
    return _EMPHASIS.sub(r"\2", text)


def normalize(text: str) -> str:
    return " ".join(strip_markup(text).split())


@dataclass
class Verdict:
    ok: bool
    reason: str = ""


def _occurs_as_term(term: str, text: str) -> bool:
    """Whether ``term`` occurs in ``text`` not glued to a longer identifier (``vload`` is
    not found inside ``vload2`` or ``my_vload``)."""
    return re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", text) is not None


class VerbatimIndex:
    """The source texts, normalized once, to check entries against."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = [normalize(t) for t in texts]
        self.corpus = "\n".join(self.texts)

    def check(self, text: str, near: str = "") -> Verdict:
        """Whether ``text`` occurs in the sources; ``near`` (the section it was copied
        from) only serves to say how much of it does when it does not."""
        entry = normalize(text)
        if len(entry) < MIN_ENTRY_CHARS:
            return Verdict(False, f"too short to check ({len(entry)} characters)")
        if entry in self.corpus:
            return Verdict(True)
        where = normalize(near) or self.corpus
        match = SequenceMatcher(None, entry, where, autojunk=False).find_longest_match(
            0, len(entry), 0, len(where)
        )
        return Verdict(
            False,
            f"not in the sources word for word (longest verbatim stretch: "
            f"{match.size} of {len(entry)} characters)",
        )

    def check_entry(self, text: str, section: str, name: str = "", signature: str = "") -> Verdict:
        """An ISA entry: its text verbatim in the sources (``check``), and its name and
        signature, where given, in the section it was copied from or in its own text. An
        invented name on copied text would otherwise reach every prompt as an
        instruction of the target."""
        verdict = self.check(text, near=section)
        if not verdict.ok:
            return verdict
        where = f"{normalize(section)}\n{normalize(text)}"
        for label, term in (("name", name), ("signature", signature)):
            wanted = normalize(term)
            if wanted and not _occurs_as_term(wanted, where):
                return Verdict(
                    False, f"its {label} {wanted!r} does not occur in the section it came from"
                )
        return Verdict(True)
