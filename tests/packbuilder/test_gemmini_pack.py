"""A pack built from the Gemmini plugin's own Markdown, its examples checked with the real
Gemmini backend (clang + Spike), then used for a two-iteration optimize against the LLM
protocol test server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pack_helpers import model_of

from autocomp_core.api import optimize_async
from autocomp_core.contract.packs import read_pack
from autocomp_core.ledger.store import RunStore
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.mdsections import split_sections
from autocomp_core.packbuilder.builder import BuildOptions, PackBuilder
from autocomp_core.packbuilder.verbatim import VerbatimIndex
from autocomp_core.testing.llm_server import LLMTestServer

REPO = Path(__file__).parents[2]
KNOWLEDGE = REPO / "plugins" / "autocomp_gemmini" / "autocomp_gemmini" / "knowledge"
HAND_OPTIMIZED = (
    REPO / "plugins" / "autocomp_gemmini" / "tests" / "candidates" / "gemm_hand_optimized.c"
).read_text()


def gemmini_reply(prompt: str) -> str:
    """Plans name the first menu item shown; implementations are the hand-optimized GEMM."""
    if prompt.rstrip().endswith("Plan:"):
        first = prompt.split("## Optimization menu\n", 1)[1].split("\n", 1)[0]
        return f"Apply {first.split('. ', 1)[1]} to the tiles of A and B."
    if "## Plan\n" in prompt:
        return f"```c\n{HAND_OPTIMIZED}```"
    raise AssertionError(f"unexpected prompt: {prompt[-300:]!r}")


@pytest.fixture(scope="module")
def gemmini_pack(pack_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("gemmini") / "pack"
    summary = anyio.run(
        PackBuilder(
            BuildOptions(
                sources=[str(KNOWLEDGE)],
                out=out,
                model=model_of(pack_server),
                target="Gemmini",
                backend="gemmini",
                problem="gemm-64x64x64",
                llm=LLMSettings(max_retries=0, timeout_s=60),
                quiet=True,
            )
        ).build
    )
    return out, summary


def test_pack_from_the_gemmini_markdown(gemmini_pack):
    out, s = gemmini_pack
    pack = read_pack(out)
    sources = sorted(KNOWLEDGE.rglob("*.md"))
    index = VerbatimIndex([p.read_text() for p in sources])  # the plugin's files, read here
    entries = [sec.text.split("\n", 1)[1] for sec in split_sections(pack.isa) if sec.level == 3]
    assert s["documents"] == len(sources) and s["sections"] >= len(sources)
    assert len(entries) == s["isa_entries"] >= 15 and all(index.check(e).ok for e in entries)
    assert s["isa_entries_refused"] == 0
    assert "`gemmini_extended_mvin(dram, local, cols, rows)`" in pack.isa
    assert len(pack.menu) >= 20
    assert "systolic-array accelerator" in pack.architecture
    # the documentation's examples are fragments: the backend refuses them as programs, the
    # (scripted) repair turns each into a whole program that builds on Gemmini
    assert s["examples_checked_with"] == "gemmini"
    assert s["examples_found"] == 2 and s["examples_kept"] + s["examples_dropped"] == 2
    report = (out / ".build" / "report.md").read_text()
    assert report.count("the repair builds and is correct") == s["examples_repaired"] >= 1
    print(json.dumps(s, indent=1))  # the numbers for the issue note (pytest -s)


def test_two_iteration_optimize_with_the_built_pack(gemmini_pack, tmp_path):
    out, _ = gemmini_pack
    pack = read_pack(out)

    async def run():
        async with LLMTestServer(lambda req: gemmini_reply(req.prompt)) as server:
            return await optimize_async(
                {
                    "backend": "gemmini",
                    "problem": "gemm-64x64x64",
                    "seed": 5,
                    "run_dir": str(tmp_path / "run"),
                    "prompt": {"pack": str(out)},
                    "models": {"plan": [model_of(server)]},
                    "search": {
                        "iterations": 2,
                        "beam_size": 1,
                        "plans_per_candidate": 1,
                        "codes_per_plan": 1,
                        "menu_keep_probability": 1.0,
                    },
                    "llm": {"max_retries": 0, "timeout_s": 60},
                }
            )

    summary = anyio.run(run)
    assert summary.stop_reason == "completed" and summary.data["iterations_completed"] == 2
    assert summary.speedup > 1.5  # the hand-optimized GEMM against the baseline
    store = RunStore(tmp_path / "run")
    plans = [c for c in store.llm_calls() if c["phase"] == "plan"]
    assert len(plans) == 2
    for call in plans:
        static, dynamic = call["request"]["static"], call["request"]["dynamic"]
        assert pack.isa.strip() in static and pack.architecture.strip() in static
        assert all(item in dynamic for item in pack.menu)
