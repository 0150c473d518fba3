"""A scripted "LLM" for the knowledge builder's prompts: a pure function of the prompt.

It routes sections by the words in their titles and text, copies ISA entries (one per
bullet line or paragraph) as an honest model would, except that it rewords an entry
containing ``PARAPHRASE-ME`` (which the verbatim check must refuse); it proposes menu
items from sentences, near-duplicates included, tops the menu up from a fixed list,
states rules from "must"/"never" sentences, names examples, and "repairs" an example by
answering the problem's own program (or a broken one for ``UNREPAIRABLE`` examples).
"""

from __future__ import annotations

import json
import re

TOP_UP = [
    "tile loops so each tile fits in local memory",
    "reorder loops for unit-stride access",
    "unroll inner loops by the vector length",
    "fuse adjacent loops over the same data",
    "hoist invariant loads out of inner loops",
    "double-buffer tiles to overlap loads and compute",
    "keep partial sums in accumulators across iterations",
    "split loops to separate edge cases",
    "replace divisions by shifts where exact",
    "merge small transfers into one large transfer",
    "precompute address offsets outside the loop",
    "pipeline independent operations",
    "reuse loaded operands for several outputs",
    "widen accumulators only at the end",
    "move reductions out of the innermost loop",
    "batch configuration changes together",
    "align buffers to the memory bus width",
    "prefer fused multiply-accumulate forms",
    "skip loads whose data is already on chip",
    "minimize synchronization between units",
    "specialize code for the common problem size",
    "vectorize the tail with masks",
    "interleave independent accumulation chains",
    "cache small constant tables on chip",
    "shrink the working set to raise reuse",
    "overlap stores of one tile with the next compute",
]

CATEGORY_WORDS = [
    ("irrelevant", ("license", "changelog", "installation", "acknowledg")),
    ("examples", ("example",)),
    ("rules", ("rule", "constraint", "requirement")),
    ("optimization", ("optimiz", "performance tip", "tuning", "faster", "porting")),
    (
        "isa",
        ("isa", "instruction", "intrinsic", "gemmini.h", "api", "configuration", "data movement"),
    ),
    ("architecture", ("architecture", "overview", "memory", "memories", "unit")),
]


def route(prompt: str) -> str:
    lines = []
    for sid, title, body in re.findall(
        r"^## Section (s\d+): (.*?) \(from .*?\)\n(.*?)(?=^## Section |\Z)", prompt, re.S | re.M
    ):
        low_title, low_body = title.lower(), body.lower()
        cats = [c for c, words in CATEGORY_WORDS if any(w in low_title for w in words)]
        if not cats:
            cats = [c for c, words in CATEGORY_WORDS if any(w in low_body[:400] for w in words)][:1]
        if "optimization" in cats and "isa" in cats:
            cats = ["optimization"]
        if "must" in low_body and "rules" not in cats and "irrelevant" not in cats:
            cats.append("rules")
        lines.append(f"{sid}: {', '.join(cats or ['irrelevant'])}")
    return "\n".join(lines)


def _entries(title: str, text: str) -> list[dict]:
    """One entry per bullet (with its continuation lines) or per plain paragraph; a line
    ending with ":" names the category of what follows."""
    category = title.split(" > ")[-1]
    entries = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip().splitlines()
        if not lines or lines[0].startswith(("#", "```")):
            continue
        if lines[0].rstrip().endswith(":"):
            category = re.sub(r"\s*\(.*\)", "", lines[0].rstrip().rstrip(":"))
            lines = lines[1:]
        pieces: list[str] = []
        for line in lines:
            if line.startswith("- ") or not pieces:
                pieces.append(line[2:].strip() if line.startswith("- ") else line.strip())
            else:
                pieces[-1] += "\n" + line.strip()
        for piece in pieces:
            if not re.search(r"\w\(", piece):  # not an instruction or function
                continue
            name = re.search(r"`([^`(]+)", piece)
            name = name.group(1) if name else piece.split()[0].strip("`:,.")
            if "PARAPHRASE-ME" in piece:  # the model rewords this one
                piece = (
                    piece.replace("PARAPHRASE-ME ", "")
                    .replace(" the ", " a ")
                    .replace("writes", "stores")
                )
            entries.append({"category": category, "name": name, "text": piece})
    return entries


def extract(prompt: str) -> str:
    m = re.search(r"## Section: (.*?)\n(.*)\n\nAnswer with JSON only", prompt, re.S)
    title, text = m.group(1), m.group(2)
    return "```json\n" + json.dumps({"entries": _entries(title, text)}, indent=1) + "\n```"


def _sentences(text: str) -> list[str]:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"^#+ .*$", " ", text, flags=re.M)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n- ", text) if len(s.split()) >= 4]


def _passages(prompt: str, ask: str) -> str:
    return re.search(rf"come from the documentation of .*?\.\n\n(.*)\n\n{ask}", prompt, re.S).group(
        1
    )


CUES = re.compile(
    r"reus|overlap|spread|serializ|double|tile|tiling|fuse|unroll|hoist|stall|"
    r"idle|pipelin|fewer|batch|port|translat|faster|avoid",
    re.I,
)


def menu(prompt: str) -> str:
    """One strategy per sentence that gives performance advice (and a near-duplicate of it)."""
    passages = _passages(prompt, "List the optimization")
    optimizations, translations = [], []
    for sentence in _sentences(passages):
        if not CUES.search(sentence):
            continue
        words = re.sub(r"[`*]", "", sentence).rstrip(".").split()
        item = " ".join(words[:14])
        if re.search(r"\bport|translat", sentence, re.I):
            translations.append(item)
        else:
            optimizations += [item, item.lower() + "."]  # the second is a near-duplicate
    return json.dumps({"optimizations": optimizations, "translations": translations})


def more_menu(prompt: str) -> str:
    count = int(re.search(r"Propose (\d+) more", prompt).group(1))
    listed = prompt.split("The optimization menu already lists:", 1)[1]
    fresh = [item for item in TOP_UP if item not in listed]
    return "Sure.\n" + "\n".join(f"- {item}" for item in fresh[:count])


def rules(prompt: str) -> str:
    passages = _passages(prompt, "Write the rules")
    out = {"general": [], "planning": [], "coding": []}
    for sentence in _sentences(passages):
        if re.search(r"\b(must|never|only)\b", sentence):
            kind = (
                "planning"
                if "plan" in sentence
                else "coding"
                if re.search(r"\bcall|code|write", sentence)
                else "general"
            )
            out[kind].append(sentence)
    return json.dumps(out)


def examples(prompt: str) -> str:
    out = []
    for sid, title, body in re.findall(
        r"^## (s\d+): (.*?)\n(.*?)(?=^## s\d+: |\n\nFor every example|\Z)", prompt, re.S | re.M
    ):
        name = title.split(" > ")[-1]
        words = [
            w
            for w in re.findall(r"[a-z]{5,}", (name + " " + body[:300]).lower())
            if w not in ("example", "examples", "which", "there")
        ]
        out.append(
            {
                "id": sid,
                "name": name,
                "triggers": list(dict.fromkeys(words))[:4],
                "phase": "code" if "```" in body else "plan",
            }
        )
    return "```json\n" + json.dumps({"examples": out}) + "\n```"


def repair(prompt: str) -> str:
    if "UNREPAIRABLE" in prompt:
        return "```python\ndef solution(xs) return 0\n```"
    program = re.search(r"The program:\n```(\w*)\n(.*?)```", prompt, re.S)
    return f"Here is a complete program.\n```{program.group(1)}\n{program.group(2)}```"


def condense(prompt: str) -> str:
    limit = int(re.search(r"in at most (\d+) characters", prompt).group(1))
    return prompt.rsplit("\n\n", 1)[-1][:limit]


# each prompt's title, and who answers it ("More ..." before the title it contains)
HANDLERS = [
    ("# Sorting documentation sections", route),
    ("# Copying ISA entries", extract),
    ("# More optimization strategies", more_menu),
    ("# Optimization strategies", menu),
    ("# Rules for programs", rules),
    ("# Naming examples", examples),
    ("# Condensing the architecture", condense),
    ("# Repairing an example", repair),
]


def reply(prompt: str) -> str:
    for title, answer in HANDLERS:
        if title in prompt:
            return answer(prompt)
    raise AssertionError(f"unexpected prompt: {prompt[:200]!r}")
