"""Reading LLM answers: plans, code, and structured edits.

Responses are messy: reasoning tags before the answer, several fenced blocks, a fence
left open by truncation, JSON wrapped in prose or in an extra envelope. Each function
here takes the raw text and returns the useful part, or says clearly why it cannot.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# The structured-edit format: OpenAI json_schema response format, Anthropic tool schema.
EDITS_JSON_SCHEMA: dict[str, Any] = {
    "name": "code_edits",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "plan": {"type": "string"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"old_str": {"type": "string"}, "new_str": {"type": "string"}},
                    "required": ["old_str", "new_str"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["plan", "edits"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Edit:
    old_str: str
    new_str: str


class EditParseError(ValueError):
    """The response holds no usable edit list."""


class EditApplyError(ValueError):
    """An edit does not match the code."""


# ---- plans ----------------------------------------------------------------------------

_REASONING_TAGS = r"think|thinking|budget:thinking|planning|reasoning"
_REASONING_END = re.compile(rf"</(?:{_REASONING_TAGS})>", re.I)
_REASONING_START = re.compile(rf"<(?:{_REASONING_TAGS})>", re.I)


def extract_plan(text: str) -> str:
    """The plan without the model's reasoning: the text after the last closing reasoning tag.

    When nothing follows that tag, the reasoning itself is the best plan there is.
    """
    ends = list(_REASONING_END.finditer(text))
    if ends:
        after = text[ends[-1].end() :].strip()
        if after:
            return after
        before = text[: ends[-1].start()]
        starts = list(_REASONING_START.finditer(before))
        return before[starts[-1].end() :].strip() if starts else before.strip()
    return _REASONING_START.sub("", text, count=1).strip()


# ---- code -----------------------------------------------------------------------------

_SYNONYMS = {
    "py": "python",
    "python3": "python",
    "py3": "python",
    "c++": "cpp",
    "cc": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "h": "c",
    "cu": "cuda",
    "js": "javascript",
    "rs": "rust",
    "sh": "bash",
    "shell": "bash",
    "zsh": "bash",
}
_FAMILIES = ({"c", "cpp", "cuda", "objc", "metal"}, {"python"})
_NOT_CODE = {
    "text",
    "txt",
    "output",
    "console",
    "bash",
    "json",
    "markdown",
    "md",
    "diff",
    "plaintext",
    "log",
    "yaml",
    "toml",
}
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\n]*?)[ \t]*$")
# A definition line: return type words, a name, a parameter list (bounded, one level of
# nested parentheses, so prose cannot make the search quadratic), then "{".
_C_FUNCTION = re.compile(
    r"^[ \t]*((?:[A-Za-z_][\w:<>]*[ \t\*&]+)+)([A-Za-z_]\w*)[ \t]*"
    r"\((?:[^;{}()]|\([^;{}()]{0,200}\)){0,600}\)[\w \t\n]{0,80}\{",
    re.M,
)
_C_KEYWORDS = {"if", "for", "while", "switch", "else", "do", "return", "case", "goto", "sizeof"}
_C_QUALIFIERS = re.compile(r"[ \t]*(?:(?:static|inline|extern|const|unsigned|signed|__\w+__)\s+)*")
_PY_START = re.compile(r"^(?:import |from \S+ import |def |async def |class |@\w|#!)", re.M)


@dataclass
class FencedBlock:
    language: str  # canonical tag, "" when untagged
    body: str
    closed: bool  # False: the response ended inside the block (truncated)


def _canonical(tag: str) -> str:
    tag = tag.strip().strip("{}.").split()[0].lower() if tag.strip().strip("{}.") else ""
    return _SYNONYMS.get(tag, tag)


def fenced_blocks(text: str) -> list[FencedBlock]:
    blocks: list[FencedBlock] = []
    opener: str | None = None
    language, lines = "", list[str]()
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if opener is None:
            if match:
                opener, language, lines = match.group(1), _canonical(match.group(2)), []
            continue
        if (
            match
            and not match.group(2)
            and match.group(1)[0] == opener[0]
            and len(match.group(1)) >= len(opener)
        ):
            blocks.append(FencedBlock(language, "\n".join(lines), True))
            opener = None
            continue
        lines.append(line)
    if opener is not None:
        blocks.append(FencedBlock(language, "\n".join(lines), False))
    return blocks


def _tier(block: FencedBlock, language: str) -> int:
    """How well a block's tag fits the wanted language: 3 exact ... 0 clearly not code."""
    if block.language in _NOT_CODE:
        return 0
    if not language:
        return 2 if block.language else 1
    if block.language == language:
        return 3
    if any(language in f and block.language in f for f in _FAMILIES):
        return 2
    return 1 if not block.language else 0


def _pick_block(blocks: list[FencedBlock], language: str, anchor: str | None) -> str | None:
    blocks = [b for b in blocks if b.body.strip()]
    if not blocks:
        return None
    best = max(_tier(b, language) for b in blocks)
    if best == 0 and language:
        return None
    pool = [b for b in blocks if _tier(b, language) == best]
    if anchor:
        pool = [b for b in pool if anchor in b.body] or pool
    # The last full program, not a trailing usage snippet: the last block at least half
    # as long as the longest one.
    longest = max(len(b.body) for b in pool)
    return [b for b in pool if len(b.body) * 2 >= longest][-1].body


def _skip_string_or_comment(text: str, i: int) -> int:
    """If a comment or string literal starts at i, the index after it; else i."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if text[i] in "\"'":
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def match_braces(text: str, start: int) -> int | None:
    """Index just past the brace that closes the first ``{`` at or after ``start``."""
    depth, i = 0, start
    while i < len(text):
        skipped = _skip_string_or_comment(text, i)
        if skipped != i:
            i = skipped
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
            if depth < 0:
                return None
        i += 1
    return None


def _find_c_function(text: str, pos: int = 0, *, at: bool = False) -> int | None:
    """Start of the first C-like function definition at/after ``pos`` (exactly at ``pos``
    when ``at``): a line with a return type, a name, parameters and an opening brace."""
    for match in _C_FUNCTION.finditer(text, pos):
        if at and match.start() != pos:
            return None
        words = match.group(1).split() + [match.group(2)]
        if not any(w in _C_KEYWORDS for w in words):
            return match.start() + len(match.group(0)) - len(match.group(0).lstrip())
        if at:
            return None
    return None


def _c_functions(text: str, anchor: str | None) -> str | None:
    """Unfenced C-like code: from the anchor (or the first function) through every
    following function, brace-matched, with the preprocessor lines just above."""
    start = text.find(anchor) if anchor else -1
    if start >= 0:
        line_start = text.rfind("\n", 0, start) + 1
        if _C_QUALIFIERS.fullmatch(text[line_start:start]):
            start = line_start
    else:
        found = _find_c_function(text)
        if found is None:
            return None
        start = found
    # Keep #include / #define / typedef lines right above the first function.
    kept: list[str] = []
    if start == text.rfind("\n", 0, start) + 1:
        for line in reversed(text[:start].split("\n")[:-1]):
            if line.strip().startswith(("#", "typedef ", "//")) or not line.strip():
                kept.insert(0, line)
                continue
            break
    end = match_braces(text, start)
    if end is None:
        return None
    while True:  # the helper functions that follow belong to the program too
        following = end + len(text[end:]) - len(text[end:].lstrip())
        if following >= len(text) or _find_c_function(text, following, at=True) is None:
            break
        nxt = match_braces(text, following)
        if nxt is None:
            break
        end = nxt
    return ("\n".join(kept).strip("\n") + "\n" + text[start:end]).strip("\n")


def _python_code(text: str, anchor: str | None) -> str | None:
    """Unfenced Python: from the first import/def/class line to the last code line."""
    match = _PY_START.search(text)
    if not match:
        return None
    lines = text[match.start() :].split("\n")
    while lines and (not lines[-1].strip() or _is_prose(lines[-1])):
        lines.pop()
    code = "\n".join(lines)
    return code if (anchor is None or anchor in code) else None


def _is_prose(line: str) -> bool:
    """A line of explanation: unindented words ending like a sentence."""
    stripped = line.strip()
    return (
        not line.startswith((" ", "\t"))
        and len(stripped.split()) >= 4
        and stripped[-1] in ".!?"
        and not stripped.startswith(("#", "return", "raise"))
    )


def _looks_like_code(text: str) -> bool:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return False
    codeish = sum(
        1
        for ln in lines
        if ln.rstrip().endswith((";", "{", "}", ":", ")", ","))
        or ln.startswith((" ", "\t", "#", "//"))
    )
    return codeish * 2 >= len(lines)


def extract_code(text: str, language: str = "", anchor: str | None = None) -> str | None:
    """The program in a response, or None when there is none.

    1. The right fenced block: tagged with ``language`` (or a close relative), else
       untagged; preferring blocks that contain ``anchor`` (e.g. ``void solution`` or
       ``class ModelNew``); the last full-size one, not a trailing snippet. A fence left
       open by truncation still counts.
    2. No fence: C-like languages brace-match from ``anchor`` or the first function
       definition; Python runs from the first import/def/class line.
    3. Otherwise the whole response when it reads as code.
    """
    language = _SYNONYMS.get(language.lower(), language.lower())
    picked = _pick_block(fenced_blocks(text), language, anchor)
    if picked is not None:
        return picked.strip("\n")
    if language == "python":
        found = _python_code(text, anchor)
    elif language in ("", *_FAMILIES[0]):
        found = _c_functions(text, anchor)
        if found is None and not language:
            found = _python_code(text, anchor)
    else:
        found = None
    if found:
        return found
    stripped = text.strip()
    if stripped and _looks_like_code(stripped) and (anchor is None or anchor in stripped):
        return stripped
    return None


# ---- structured edits ---------------------------------------------------------------------

_OLD_KEYS = ("old_str", "old", "search", "find", "original", "old_string")
_NEW_KEYS = ("new_str", "new", "replace", "replacement", "new_string")


def _strip_dollar(obj: Any) -> Any:
    """Some models prefix keys with '$' (``$edits``): drop it, recursively."""
    if isinstance(obj, dict):
        return {
            k.lstrip("$") if isinstance(k, str) else k: _strip_dollar(v) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_strip_dollar(v) for v in obj]
    return obj


def _json_candidates(text: str) -> list[str]:
    candidates = [text.strip()]
    candidates += [b.body for b in fenced_blocks(text) if b.language in ("json", "")]
    brace = text.find("{")
    if brace >= 0:
        end = match_braces(text, brace)
        if end:
            candidates.append(text[brace:end])
    return candidates


def _load_json(text: str) -> Any:
    first_error = None
    for candidate in _json_candidates(text):
        try:
            return json.loads(candidate, strict=False)  # raw newlines inside strings are common
        except ValueError as exc:
            first_error = first_error or exc
    raise EditParseError(
        f"response is not JSON ({first_error}); it starts with {text.strip()[:80]!r}"
    )


def _edit_from(item: Any, index: int) -> Edit:
    if not isinstance(item, dict):
        raise EditParseError(
            f"edit {index} is a {type(item).__name__}, not an object with old_str and new_str"
        )
    old = next((item[k] for k in _OLD_KEYS if k in item), None)
    new = next((item[k] for k in _NEW_KEYS if k in item), None)
    if not isinstance(old, str):
        raise EditParseError(f"edit {index} has no string old_str (keys: {sorted(item)})")
    if new is None:
        new = ""
    if not isinstance(new, str):
        raise EditParseError(f"edit {index} has a non-string new_str")
    return Edit(old, new)


def _shape(obj: Any, depth: int = 0) -> tuple[str, list]:
    """Find (plan, raw edit list) in whatever shape the model produced."""
    if depth > 4:
        raise EditParseError("no edit list found in the JSON")
    if isinstance(obj, str):  # JSON encoded twice
        try:
            return _shape(json.loads(obj, strict=False), depth + 1)
        except ValueError:
            raise EditParseError("the JSON holds a string, not an edit object") from None
    if isinstance(obj, list):
        return "", obj
    if not isinstance(obj, dict):
        raise EditParseError(f"the JSON is a {type(obj).__name__}, not an object")
    plan = obj.get("plan", "")
    plan = plan if isinstance(plan, str) else json.dumps(plan)
    if "edits" in obj:
        edits = obj["edits"]
        if isinstance(edits, str):
            _, edits = _shape(edits, depth + 1)
        if isinstance(edits, dict):
            edits = [edits]
        if not isinstance(edits, list):
            raise EditParseError(f"'edits' is a {type(edits).__name__}, not a list")
        return plan, edits
    if any(k in obj for k in _OLD_KEYS):
        return plan, [obj]
    if len(obj) == 1:  # an envelope such as {"code_edits": {...}} or {"response": {...}}
        return _shape(next(iter(obj.values())), depth + 1)
    raise EditParseError(f"the JSON has no 'edits' list (keys: {sorted(obj)[:8]})")


def parse_edit_response(text: str) -> tuple[str, list[Edit]]:
    """(plan, edits) from a structured-edit response. An empty edit list is valid."""
    plan, raw = _shape(_strip_dollar(_load_json(text)))
    return plan, [_edit_from(item, i) for i, item in enumerate(raw, 1)]


def parse_edits(text: str) -> list[Edit]:
    return parse_edit_response(text)[1]


def _normalize(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _window_replace(code: str, old: str, new: str) -> str | None:
    """Replace the first run of lines equal to ``old`` up to whitespace, re-indenting ``new``."""
    code_lines = code.split("\n")
    old_lines = old.strip("\n").split("\n")
    target = [_normalize(line) for line in old_lines]
    n = len(target)
    for i in range(len(code_lines) - n + 1):
        if [_normalize(line) for line in code_lines[i : i + n]] != target:
            continue
        have, wrote = _indent(code_lines[i]), _indent(old_lines[0])
        new_lines = new.strip("\n").split("\n") if new.strip() else []
        if have.startswith(wrote):
            extra = have[len(wrote) :]
            new_lines = [extra + ln if ln.strip() else ln for ln in new_lines]
        elif wrote.startswith(have):
            cut = len(wrote) - len(have)
            new_lines = [
                ln[cut:] if _indent(ln).startswith(wrote[:cut]) else ln for ln in new_lines
            ]
        return "\n".join(code_lines[:i] + new_lines + code_lines[i + n :])
    return None


def apply_edits(code: str, edits: list[Edit]) -> str:
    """Apply edits in order: exact match replaces every occurrence; otherwise the first
    whitespace-insensitive match of the same lines. Raises EditApplyError naming the edit."""
    for index, edit in enumerate(edits, 1):
        if edit.old_str == edit.new_str:
            continue
        if not edit.old_str.strip():
            raise EditApplyError(f"edit {index} of {len(edits)} has an empty old_str")
        if edit.old_str in code:
            code = code.replace(edit.old_str, edit.new_str)
            continue
        replaced = _window_replace(code, edit.old_str, edit.new_str)
        if replaced is None:
            first = edit.old_str.strip().split("\n")[0][:80]
            raise EditApplyError(
                f"edit {index} of {len(edits)}: old_str not found in the code "
                f"(starts with {first!r})"
            )
        code = replaced
    return code
