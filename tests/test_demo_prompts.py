"""What the README demo sends its model (``examples/demo.toml``: the embedded SmolLM2-135M
optimizing a Gemmini GEMM), counted in that model's own tokens.

On two cores the demo's time is mostly the small model evaluating prompts (about a hundred
tokens per CPU-second), and the model server evaluates only what follows the prefix a call
shares with the one before. So: the knowledge a call carries (system message, architecture,
rules) costs fewer tokens than the program it asks about, and every call of the iteration
repeats the first one's text up to the task, so only its own ask is evaluated anew.

The run is the demo's configuration through the engine and the Gemmini evaluator, with a
scripted model standing in for the embedded one, sent the pack the demo's model gets.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from autocomp_core.api import optimize_async
from autocomp_core.ledger.store import RunStore
from autocomp_core.llm.providers import local_model_file
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import Prompt
from autocomp_core.run.runner import prepare
from autocomp_core.testing.llm_server import LLMTestServer

ROOT = Path(__file__).resolve().parents[1]
DEMO = tomllib.loads((ROOT / "examples" / "demo.toml").read_text())
PROGRAM = re.compile(r"## Current program\n```c\n.*?```", re.S)


@pytest.fixture(scope="module")
def tokens():
    """Token count of a text in the embedded model's vocabulary."""
    import llama_cpp

    path = local_model_file("smollm2", LLMSettings())
    model = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    return lambda text: len(model.tokenize(text.encode(), add_bos=False, special=True))


def answer(request) -> str:
    """Plans name one change; implementations return the current program unchanged."""
    if request.prompt.rstrip().endswith("Plan:"):
        return "Hoist the bias load out of the k loop."
    program = PROGRAM.search(request.prompt).group(0).split("\n", 1)[1]
    return program + "\n"


def chat(call: dict) -> str:
    """A journaled request's messages in the order the server reads them."""
    r = call["request"]
    return "\n".join(
        m["content"] for m in Prompt(r["system"], r["static"], r["dynamic"]).messages()
    )


@pytest.mark.asyncio
async def test_the_demo_sends_less_knowledge_than_program_and_shares_its_prefix(tmp_path, tokens):
    # the demo's model without an API key: the embedded one
    demo_pack = prepare({**DEMO, "models": {"plan": ["local::smollm2"]}}, with_llm=False).pack
    assert demo_pack.architecture.startswith("# Gemmini architecture (summary)")
    async with LLMTestServer(answer) as server:
        await optimize_async(
            {
                **DEMO,
                "run_dir": str(tmp_path / "run"),
                "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
                "prompt": {"knowledge": "compact"},  # what "auto" gives the embedded model
                "llm": {**DEMO["llm"], "max_retries": 0, "timeout_s": 60},
            }
        )
    calls = list(RunStore(tmp_path / "run").llm_calls())
    phases = sorted(c["phase"] for c in calls)
    assert phases == ["code", "code", "plan", "plan"]
    first = chat(calls[0])
    program = PROGRAM.search(first).group(0)
    shared = first[: first.index("# Your task")]  # through the current program
    for call in calls:
        r = call["request"]
        assert demo_pack.architecture.strip() in r["static"]
        assert tokens(r["system"]) + tokens(r["static"]) < tokens(program)
        assert chat(call).startswith(shared), call["phase"]
