"""The verbatim check: an ISA entry is accepted only if its text occurs in the sources.

The comparison ignores how whitespace is laid out (a PDF's line breaks, an HTML page's
indentation) and nothing else: a changed word, a dropped clause or a reordered sentence
is a paraphrase and is refused, with the longest stretch that does match as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

#: shorter than this, a "match" proves nothing (a bare name occurs everywhere)
MIN_ENTRY_CHARS = 20


def normalize(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Verdict:
    ok: bool
    reason: str = ""


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
