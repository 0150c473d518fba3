"""What a build refuses to put into a pack: an ISA entry whose name or signature the
documents do not contain (while an entry that only lost its Markdown backticks is still
the documents' text), and a pack with no ISA or too short a menu, which fails the build
with exit 1 and one line; ``optimize`` refuses a pack with no menu."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from pack_helpers import model_of
from pack_llm import reply

from autocomp_core.contract.backend import KnowledgePack
from autocomp_core.contract.packs import read_pack
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.packbuilder.answers import BuildError
from autocomp_core.packbuilder.builder import BuildOptions, PackBuilder
from autocomp_core.packbuilder.packfiles import write_pack
from autocomp_core.packbuilder.verbatim import VerbatimIndex
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()

GUIDE = """# Vecto instructions

- `vload(row, addr, n)` copies n bytes from main memory at addr into local memory row.
- `vmac(acc, x, y)` multiplies registers x and y lane by lane and adds the products to acc.
- `vsum(dst, acc)` adds the 16 lanes of acc and writes the total to register dst.
- `vmove(dst_row, src_row)` copies one row of local memory to another row.

# Optimization guide

Reuse every row loaded into local memory before it is replaced. Double-buffer the input
tiles when a loop streams through a large array. Unroll short inner loops to keep the
compute unit busy.
"""


def guide(tmp_path: Path) -> Path:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    return path


def serving(answer):
    return LLMTestServer(lambda req: answer(req.prompt)).start_in_thread()


def build(server, out: Path, sources: list[Path], **kw) -> dict:
    options = BuildOptions(
        sources=[str(s) for s in sources],
        out=out,
        model=model_of(server),
        target="Vecto",
        llm=LLMSettings(max_retries=0, timeout_s=30),
        quiet=True,
        **kw,
    )
    return anyio.run(PackBuilder(options).build)


def careless_extract(prompt: str) -> str:
    """The scripted model, except that it copies ISA entries as a careless model would:
    an invented name on vload's text, vmac's text without its backticks, an invented
    signature for vsum and vmove's real one."""
    answer = reply(prompt)
    if "# Copying ISA entries" not in prompt:
        return answer
    data = json.loads(answer.removeprefix("```json\n").removesuffix("\n```"))
    for entry in data["entries"]:
        if entry["name"] == "vload":
            entry["name"] = "vturbo"
        elif entry["name"] == "vmac":
            entry["text"] = entry["text"].replace("`", "")
        elif entry["name"] == "vsum":
            entry["signature"] = "vsum(dst, acc, lanes)"
        elif entry["name"] == "vmove":
            entry["signature"] = "vmove(dst_row, src_row)"
    return json.dumps(data)


def test_entry_names_and_signatures_must_occur_in_the_sources(tmp_path):
    server = serving(careless_extract)
    try:
        summary = build(server, tmp_path / "pack", [guide(tmp_path)])
    finally:
        server.stop_thread()
    isa = read_pack(tmp_path / "pack").isa
    headings = re.findall(r"^### (.*)$", isa, re.M)
    # the backticks alone do not make vmac's copied text a paraphrase
    assert headings == ["vmac", "vmove"], isa
    assert "vmac(acc, x, y) multiplies registers x and y" in isa
    assert "vturbo" not in isa and "lanes)" not in isa
    assert summary["isa_entries_refused"] == 2
    report = (tmp_path / "pack" / ".build" / "report.md").read_text()
    assert "- vturbo (section s1: Vecto instructions): its name 'vturbo' does not occur" in report
    assert "its signature 'vsum(dst, acc, lanes)' does not occur" in report


def test_the_verbatim_check_reads_through_markdown_markup():
    section = (
        "- `vmac(acc, x, y)` multiplies registers x and y **lane by lane** and adds the\n"
        "  products to the [accumulator](regs.md#acc) register acc.\n"
        "- `vload2(row)` loads a second row."
    )
    index = VerbatimIndex([section])
    copied = (
        "vmac(acc, x, y) multiplies registers x and y lane by lane and adds the products "
        "to the accumulator register acc."
    )
    assert index.check(copied).ok
    assert index.check_entry(copied, section, "vmac", "vmac(acc, x, y)").ok
    # a changed word is still a paraphrase, markup or not
    assert not index.check(copied.replace("adds", "sums")).ok
    # a name or signature the section does not contain
    assert not index.check_entry(copied, section, "vfma").ok
    assert not index.check_entry(copied, section, "vmac", "vmac(acc, x, y, z)").ok
    # a name is a whole term: not found inside a longer identifier
    assert not index.check_entry(copied, section, "vload").ok
    assert index.check_entry(copied, section, "vload2").ok


def weak_model(prompt: str) -> str:
    """A model too weak to follow the prompts: it routes no section and proposes no menu
    item (every other answer as the scripted model's)."""
    if "# Sorting documentation sections" in prompt:
        return "These sections are all about the Vecto accelerator."
    if "# Optimization strategies" in prompt or "# More optimization strategies" in prompt:
        return "Make it faster."
    return reply(prompt)


def test_an_empty_pack_fails_the_build_in_one_line(tmp_path):
    server = serving(weak_model)
    out = tmp_path / "pack"
    try:
        with pytest.raises(BuildError) as caught:
            build(server, out, [guide(tmp_path)])
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith("build failed, no pack written: the ISA is empty")
        assert "left 2 of 2 sections unrouted" in message
        assert message.count("unrouted") == 1  # one cause for both, said once
        assert "the menu has 0 of --min-menu-items 20 items" in message
        assert not (out / "knowledge.toml").exists()
        report = (out / ".build" / "report.md").read_text()
        assert "**Build failed, no pack written**: the ISA is empty" in report
        # the command line: exit 1, the one line
        done = subprocess.run(
            [
                *CLI,
                "build-pack",
                str(guide(tmp_path)),
                "--out",
                str(out),
                "--model",
                model_of(server),
                "--set",
                "llm.max_retries=0",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        server.stop_thread()
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: build failed, no pack written: the ISA")
    assert not (out / "knowledge.toml").exists()


def test_a_menu_short_of_the_minimum_fails_the_build(tmp_path):
    server = serving(reply)
    try:
        with pytest.raises(BuildError) as caught:
            build(server, tmp_path / "pack", [guide(tmp_path)], min_menu_items=200)
    finally:
        server.stop_thread()
    message = str(caught.value)
    assert re.match(
        r"build failed, no pack written: the menu has \d+ of --min-menu-items 200 items "
        r"\(the documents and the top-up rounds gave too few distinct strategies; ",
        message,
    ), message
    assert "ISA" not in message  # the ISA has its entries
    assert not (tmp_path / "pack" / "knowledge.toml").exists()


def test_optimize_refuses_a_pack_with_no_menu(tmp_path):
    pack = tmp_path / "no-menu"
    write_pack(KnowledgePack(architecture="Vecto has 64 KB of local memory.", isa="# ISA"), pack)
    command = [
        *CLI,
        "optimize",
        "--backend",
        "toy",
        "--problem",
        "sum_squares",
        "--run-dir",
        str(tmp_path / "run"),
        "--model",
        "openai-compatible@http://127.0.0.1:9/v1::unused",
        "--set",
        f"prompt.pack={pack}",
        "--set",
        "llm.max_retries=0",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the knowledge pack has no optimization menu" in lines[0]
    assert str(pack) in lines[0]
    # direct mode has no planning step, and so no menu to offer
    direct = subprocess.run(
        [*command, "--set", "search.direct=true", "--set", "search.iterations=0", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert direct.returncode == 0, direct.stderr
