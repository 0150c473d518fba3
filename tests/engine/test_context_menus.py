"""Run-time context selection and generated menus, end to end on the toy backend: the
LLM's choices are journaled, resume and replay reuse them, and the prompts carry exactly
what was chosen."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
from engine_helpers import toy_config
from scripted_llm import digest, reply

from autocomp_core.api import optimize_async, replay_async, resume_async
from autocomp_core.contract.backend import KnowledgePack
from autocomp_core.errors import ConfigError
from autocomp_core.ledger.store import RunStore
from autocomp_core.packbuilder.packfiles import write_pack
from autocomp_core.run.runner import prepare
from autocomp_core.testing.llm_server import LLMTestServer

pytestmark = pytest.mark.asyncio

TOY_PACK = Path(__file__).parent.parent / "toybackend" / "knowledge"
FILLER = "Each of these forms is charged per executed line by the toy machine. " * 40

# ISA sections and their subsections; chosen ones marked
SECTIONS = {
    "Arithmetic": ["add", "mul", "divmod"],
    "Loops": ["for", "while"],
    "Builtins": ["sum", "map", "max"],
    "Strings": ["format", "join"],
    "Files": ["open", "seek"],
    "Networking": ["socket", "http"],
}
CHOSEN_SECTIONS = {"Arithmetic", "Builtins"}
CHOSEN_SUBSECTIONS = {"Arithmetic > mul", "Builtins > sum", "Builtins > map"}


def big_isa() -> str:
    parts = ["# Toy machine ISA", "PREAMBLE-MARK: every instruction below costs one line."]
    for section, subs in SECTIONS.items():
        parts.append(f"## {section}\nSECTION-HEAD-{section.lower()}")
        for sub in subs:
            parts.append(f"### {sub}\nMARK-{section.lower()}-{sub}. {FILLER}")
    return "\n\n".join(parts)


def make_pack(folder: Path, isa: str) -> Path:
    write_pack(replace(KnowledgePack.from_dir(TOY_PACK), isa=isa), folder)
    return folder


def numbers_of(prompt: str, wanted) -> str:
    """The listing numbers of the wanted items in a selection prompt."""
    picks = []
    for number, title in re.findall(r"^(\d+)\. (.+?)(?: \(|:)", prompt, re.M):
        if title.strip() in wanted:
            picks.append(number)
    return ", ".join(picks) or "none"


def responder(request) -> str:
    prompt = request.prompt
    if "Below are the ISA sections" in prompt:
        return numbers_of(prompt, CHOSEN_SECTIONS)
    if "Below are the ISA subsections" in prompt:
        return f"Keep {numbers_of(prompt, CHOSEN_SUBSECTIONS)}."
    if "Below are the examples" in prompt:
        return numbers_of(prompt, {"builtins instead of loops"})
    if "NEW optimization strategies" in prompt:
        tag = digest(prompt) % 1000
        return (
            "Here you go:\n"
            "- Hoist loop invariant expressions and repeated len calls out of the loops\n"
            f"- GENMARK-{tag}-a: square with one multiplication per element via map\n"
            f"- **GENMARK-{tag}-b**: fold the accumulation into a single sum() call\n"
        )
    if prompt.rstrip().endswith("Plan:"):  # every plan triggers the "builtin" example
        return "Use the builtin map rewrite."
    return reply(prompt)


@pytest_asyncio.fixture
async def server():
    async with LLMTestServer(responder) as s:
        yield s


def calls(store, phase=None):
    return [c for c in store.llm_calls() if phase is None or c["phase"] == phase]


def text(call) -> str:
    r = call["request"]
    return f"{r['static']}\n\n{r['dynamic']}"


def menu_part(call) -> str:
    body = call["request"]["dynamic"]
    return (
        body.split("## Optimization menu", 1)[1].split("\n## ", 1)[0]
        if "## Optimization menu" in body
        else ""
    )


def config(server, tmp_path, pack: Path | None = None, prompt=None, **search):
    cfg = toy_config(
        server,
        tmp_path,
        **{"iterations": 2, "plans_per_candidate": 2, "codes_per_plan": 1, **search},
    )
    cfg["prompt"] = {**({"pack": str(pack)} if pack else {}), **(prompt or {})}
    return cfg


def selection_requests(server) -> int:
    return sum("Choosing reference material" in r.prompt for r in server.requests)


async def test_large_isa_is_narrowed_once_and_prompts_carry_the_choice(server, tmp_path):
    pack = make_pack(tmp_path / "pack", big_isa())
    cfg = config(server, tmp_path, pack, {"fine_grained": True, "examples_select_above_chars": 100})
    await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    assert len(calls(store, "select_context")) == 3  # sections, subsections, examples
    assert {c["request"]["temperature"] for c in calls(store, "select_context")} == {0.0}
    assert {c["request"]["temperature"] for c in calls(store, "plan")} == {1.0}
    chosen = store.get_meta("context_selection")
    assert chosen["isa"]["sections"] == [
        {"section": "Arithmetic", "subsections": ["mul"]},
        {"section": "Builtins", "subsections": ["sum", "map"]},
    ]
    assert chosen["isa"]["chars_before"] > 30_000 > chosen["isa"]["chars_after"]
    assert chosen["examples"]["examples"] == ["builtins instead of loops"]
    work = calls(store, "plan") + calls(store, "code")
    assert work
    for call in work:
        body = text(call)
        for mark in (
            "PREAMBLE-MARK",
            "SECTION-HEAD-arithmetic",
            "MARK-arithmetic-mul",
            "MARK-builtins-sum",
            "MARK-builtins-map",
        ):
            assert mark in body
        for mark in (
            "MARK-arithmetic-add",
            "MARK-builtins-max",
            "MARK-loops-for",
            "MARK-files",
            "SECTION-HEAD-networking",
            "counting with a dictionary",
        ):
            assert mark not in body
        assert call["request"]["context"]["isa"] == chosen["isa"]["sections"]
        assert set(call["request"]["context"]["examples"]) <= {"builtins instead of loops"}
    used = {n for c in calls(store, "code") for n in c["request"]["context"]["examples"]}
    assert used == {"builtins instead of loops"}  # the scripted plans trigger it
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Prompt context" in report and "Arithmetic (mul); Builtins (sum, map)" in report
    assert "builtins instead of loops" in report

    # replay: the same choices from the recorded answers, no request reaches the server
    before = server.request_count
    await replay_async(tmp_path / "run", into=tmp_path / "replay")
    assert server.request_count == before
    replayed = RunStore(tmp_path / "replay")
    assert replayed.get_meta("context_selection") == chosen
    assert {c["key"] for c in calls(replayed)} == {c["key"] for c in calls(store)}


async def test_resume_reuses_the_selection(server, tmp_path):
    pack = make_pack(tmp_path / "pack", big_isa())
    cfg = config(server, tmp_path, pack)
    cfg["budget"] = {"llm_calls": 4}  # stops inside iteration 1
    summary = await optimize_async(cfg)
    assert summary.stop_reason == "budget.llm_calls"
    assert selection_requests(server) == 1
    summary = await resume_async(
        tmp_path / "run", progress=False, overrides=["budget.llm_calls=1000"]
    )
    assert summary.stop_reason == "completed"
    assert selection_requests(server) == 1  # answered from the journal
    store = RunStore(tmp_path / "run")
    assert all(
        "MARK-builtins-max" in text(c) and "MARK-files-open" not in text(c)
        for c in calls(store, "plan")
    )


async def test_isa_under_the_threshold_is_sent_whole(server, tmp_path):
    small = "# Toy ISA\n\n## Builtins\nSMALL-ISA-MARK sum and map\n\n## Loops\nfor and while\n"
    pack = make_pack(tmp_path / "pack", small)
    await optimize_async(config(server, tmp_path, pack, iterations=1))
    store = RunStore(tmp_path / "run")
    assert selection_requests(server) == 0 and not calls(store, "select_context")
    assert set(store.get_meta("context_selection")) == {"pack"}  # nothing chosen
    assert all(
        "SMALL-ISA-MARK" in text(c)
        and "## Loops" in text(c)
        and c["request"]["context"]["isa"] == "all"
        for c in calls(store, "plan")
    )


async def test_generated_menu_replaces_the_static_one(server, tmp_path):
    static = KnowledgePack.from_dir(TOY_PACK).menu
    await optimize_async(
        config(
            server,
            tmp_path,
            menu_strategy="generated",
            menu_keep_probability=1.0,
            generated_menu_size=5,
        )
    )
    store = RunStore(tmp_path / "run")
    menus = store.events("generated_menu")
    beams = [len(store.beam(i)) for i in (0, 1)]
    assert len(calls(store, "menu")) == len(menus) == sum(beams)  # one per parent and iteration
    for event in menus:
        assert [m.split(":")[0].split("-")[0] for m in event["items"]] == ["GENMARK", "GENMARK"]
        assert event["repeats"] == [
            "Hoist loop invariant expressions and repeated len calls out of the loops"
        ]  # a near-duplicate of a static item
    for call in calls(store, "plan"):
        menu = menu_part(call)
        assert "GENMARK" in menu and "**" not in menu
        assert not any(item in menu for item in static)
    # replay reproduces the menus from the journal, without the server
    before = server.request_count
    await replay_async(tmp_path / "run", into=tmp_path / "replay")
    assert server.request_count == before
    replayed = RunStore(tmp_path / "replay").events("generated_menu")
    assert [(e["iteration"], e["parent"], e["items"]) for e in replayed] == [
        (e["iteration"], e["parent"], e["items"]) for e in menus
    ]


async def test_mixed_menu_and_resume(server, tmp_path):
    static = KnowledgePack.from_dir(TOY_PACK).menu
    cfg = config(server, tmp_path, menu_strategy="mixed", menu_keep_probability=1.0)
    cfg["budget"] = {"llm_calls": 6}
    await optimize_async(cfg)
    asked = sum("NEW optimization strategies" in r.prompt for r in server.requests)
    await resume_async(tmp_path / "run", progress=False, overrides=["budget.llm_calls=1000"])
    store = RunStore(tmp_path / "run")
    pairs = {(e["iteration"], e["parent"]) for e in store.events("generated_menu")}
    total = sum("NEW optimization strategies" in r.prompt for r in server.requests)
    assert asked >= 1 and total == len(pairs)  # nothing asked twice across the two sessions
    for call in calls(store, "plan"):
        menu = menu_part(call)
        assert all(item in menu for item in static) and "GENMARK" in menu


async def test_generated_menu_size_needs_a_generated_menu(server, tmp_path):
    with pytest.raises(ConfigError, match=re.escape("search.generated_menu_size")):
        await optimize_async(config(server, tmp_path, generated_menu_size=5))


async def test_compact_knowledge_sends_no_isa_or_examples_and_plans_get_their_own_limit(
    server, tmp_path
):
    pack = make_pack(tmp_path / "pack", big_isa())
    cfg = config(server, tmp_path, pack, {"knowledge": "compact"}, iterations=1)
    cfg["llm"].update(max_tokens=400, plan_max_tokens=60)
    await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    assert not calls(store, "select_context")  # no ISA left to narrow, though it is large
    plans, codes = calls(store, "plan"), calls(store, "code")
    assert plans and codes
    for call in plans + codes:
        body = text(call)
        assert "# The toy machine" in body  # the architecture stays
        assert "PREAMBLE-MARK" not in body and "MARK-arithmetic" not in body
        assert "## Example:" not in body  # every plan names the builtin example's trigger
        assert call["request"]["context"] == {"isa": [], "examples": []}
    assert {c["request"]["max_tokens"] for c in plans} == {60}
    assert {c["request"]["max_tokens"] for c in codes} == {400}
    assert "| plan | none | - |" in (tmp_path / "run" / "report.md").read_text()


async def test_full_knowledge_keeps_the_examples_compact_drops(server, tmp_path):
    """The counterpart of the compact run: the same run with the whole pack shows the
    example and the ISA, so the test above cannot pass by accident."""
    pack = make_pack(tmp_path / "pack", "# Toy ISA\nPREAMBLE-MARK: one line each.")
    await optimize_async(config(server, tmp_path, pack, {"knowledge": "full"}, iterations=1))
    codes = calls(RunStore(tmp_path / "run"), "code")
    assert codes and all("PREAMBLE-MARK" in text(c) for c in codes)
    assert any("## Example:" in text(c) for c in codes)
    assert all(c["request"]["max_tokens"] is None for c in codes)


@pytest.mark.parametrize(
    ("plan", "code", "aliases", "knowledge", "compact"),
    [
        (["local::smollm2"], [], {}, "auto", True),
        (["tiny"], [], {"tiny": "local::smollm2"}, "auto", True),  # an alias of the local model
        (["local::smollm2"], ["openai::gpt-5.4-mini"], {}, "auto", False),
        (["local::smollm2"], [], {}, "full", False),
        (["openai::gpt-5.4-mini"], [], {}, "compact", True),
    ],
)
async def test_knowledge_auto_is_compact_only_when_every_model_is_local(
    tmp_path, plan, code, aliases, knowledge, compact
):
    cfg = {
        "backend": "toy",
        "problem": "sum_squares",
        "models": {"plan": plan, "code": code},
        "llm": {"aliases": aliases},
        "prompt": {"knowledge": knowledge},
    }
    prepared = prepare(cfg, with_llm=False)
    full = KnowledgePack.from_dir(TOY_PACK)
    assert prepared.pack.architecture == full.architecture and prepared.pack.menu == full.menu
    assert (prepared.pack.isa, prepared.pack.examples) == (
        ("", []) if compact else (full.isa, full.examples)
    )
