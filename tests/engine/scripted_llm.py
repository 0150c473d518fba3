"""A scripted "LLM" for engine tests and benchmarks on the toy backend's sum_squares problem.

Replies are a pure function of the prompt, so a run is reproducible from its seed. Plans
name one of a few program variants (faster, slower, wrong, broken); implementations
return that variant, as full code or as an old/new edit, so the engine's real parsing,
edit application, evaluation, repair and selection all run.
"""

from __future__ import annotations

import hashlib
import json
import re

VARIANTS = {
    "builtin map": "def solution(xs):\n    return sum(map(int.__mul__, xs, xs))\n",
    "generator": "def solution(xs):\n    return sum(x * x for x in xs)\n",
    "tight loop": (
        "def solution(xs):\n    total = 0\n    for x in xs:\n"
        "        total += x * x\n    return total\n"
    ),
    "padded loop": (
        "def solution(xs):\n    total = 0\n    for x in xs:\n        y = x\n"
        "        y = y * x\n        total += y\n    return total\n"
    ),
    "wrong sum": "def solution(xs):\n    return sum(xs)\n",
    "syntax slip": "def solution(xs)\n    return sum(x * x for x in xs)\n",
}
PLANS = list(VARIANTS)


def digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def current_program(prompt: str) -> str:
    m = re.search(
        r"## (?:Current program|Failing program)[^\n]*\n```[a-z]*\n(.*?)```", prompt, re.S
    )
    return m.group(1) if m else ""


def choose_plan(prompt: str) -> str:
    return PLANS[digest(prompt) % len(PLANS)]


def reply(prompt: str) -> str:
    """The whole scripted policy."""
    if "Answer with a single number" in prompt:
        return str(5 + digest(prompt) % 6)
    if "Combine" in prompt or "combines the optimizations" in prompt:
        return f"```python\n{VARIANTS['builtin map']}```"
    if "## Failing program" in prompt:
        variant = VARIANTS["tight loop"]
    elif "## Plan\n" in prompt:
        plan = prompt.split("## Plan\n", 1)[1].split("\n", 1)[0]
        name = next((n for n in PLANS if n in plan), "tight loop")
        variant = VARIANTS[name]
    elif prompt.rstrip().endswith("Plan:"):
        return f"<think>Considering the menu.</think>Use the {choose_plan(prompt)} rewrite."
    else:  # direct mode
        variant = VARIANTS[choose_plan(prompt)]
    if '"edits"' in prompt:
        old = current_program(prompt)
        return json.dumps({"plan": "rewrite", "edits": [{"old_str": old, "new_str": variant}]})
    return f"Here is the program.\n```python\n{variant}```\n"
