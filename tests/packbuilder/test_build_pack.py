"""The knowledge builder end to end on a made-up target ("Vecto"): Markdown on disk, HTML
pages crawled from a server on 127.0.0.1, a PDF made in the test, the LLM protocol test
server scripted to route, extract and synthesize, examples checked with the toy backend."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import anyio
import pytest
from pack_helpers import DOCS, make_pdf, model_of
from pack_llm import reply

from autocomp_core.contract.packs import PackError, pack_files, read_pack
from autocomp_core.contract.plugins import build_registry
from autocomp_core.engine.menus import near_duplicate
from autocomp_core.ledger.store import RunStore
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.mdsections import split_sections
from autocomp_core.packbuilder.answers import BuildError
from autocomp_core.packbuilder.builder import BuildOptions, BuildStopped, PackBuilder
from autocomp_core.packbuilder.crawl import CrawlLimits, crawl
from autocomp_core.packbuilder.sources import SourceError, pdf_to_markdown, source_files
from autocomp_core.packbuilder.verbatim import VerbatimIndex
from autocomp_core.testing.llm_server import Fault, FaultPlan, LLMTestServer

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()

LIMITS = CrawlLimits(max_depth=2, max_page_bytes=100_000)


def options(server, out: Path, sources, **kw) -> BuildOptions:
    return BuildOptions(
        sources=[str(s) for s in sources],
        out=out,
        model=model_of(server),
        target="Vecto",
        llm=LLMSettings(max_retries=0, timeout_s=30),
        quiet=True,
        **kw,
    )


def build(server, out: Path, sources, **kw) -> dict:
    return anyio.run(PackBuilder(options(server, out, sources, **kw)).build)


def pack_texts(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text() for name in pack_files(out)}


def journal(out: Path) -> RunStore:
    return RunStore(out / ".build")


@pytest.fixture(scope="module")
def built(pack_server, sites, tmp_path_factory):
    site, _ = sites
    tmp = tmp_path_factory.mktemp("build")
    pdf = make_pdf(tmp / "rules.pdf")
    sources = [DOCS / "vecto-guide.md", f"{site.url}/index.html", pdf]
    before = pack_server.request_count
    summary = build(pack_server, tmp / "pack", sources, backend="toy", crawl=LIMITS)
    return {
        "out": tmp / "pack",
        "summary": summary,
        "sources": sources,
        "requests": pack_server.request_count - before,
    }


def isa_entries(isa: str) -> list[tuple[str, str]]:
    """(name, text) of every ``###`` entry of a built ISA."""
    return [(s.title, s.text.split("\n", 1)[1]) for s in split_sections(isa) if s.level == 3]


def test_pack_from_markdown_html_and_pdf(built):
    out, s = built["out"], built["summary"]
    pack = read_pack(out)  # the loader the plugins use
    # 1 Markdown file, 5 crawled pages (index, load, compute, deep1, deep2), 1 PDF
    assert s["documents"] == 7
    assert s["routed"]["isa"] >= 3 and s["routed"]["irrelevant"] >= 1
    assert s["unrouted"] == 0
    assert "64 KB of local memory" in pack.architecture
    assert "Acknowledgements" not in (out / "knowledge.toml").read_text() + pack.architecture
    # ISA: grouped by category, every entry verbatim in the documents the build read
    assert "## Data movement" in pack.isa and "## Compute" in pack.isa
    entries = isa_entries(pack.isa)
    names = {name for name, _ in entries}
    assert {"vload", "vmove", "vmac", "vsum", "vsplat"} <= names
    assert any("vsync() waits until every queued command" in text for _, text in entries)
    documents = journal(out).get_meta("stage/sources")["output"]["documents"]
    index = VerbatimIndex([d["text"] for d in documents])
    assert len(entries) == s["isa_entries"] == s["isa_entries_verbatim"]
    assert all(index.check(text).ok for _, text in entries)
    # the paraphrased entry was refused, with its reason in the report
    assert s["isa_entries_refused"] == 1 and "vstore" not in pack.isa
    report = (out / ".build" / "report.md").read_text()
    assert re.search(r"- vstore .*: not in the sources word for word", report)
    # menu: at least 20 distinct items, near-duplicates merged
    assert len(pack.menu) >= 20 and s["menu_near_duplicates_merged"] >= 5
    assert not any(near_duplicate(a, b) for a, b in itertools.combinations(pack.menu, 2))
    assert any("Double-buffer the input tiles" in item for item in pack.menu)
    assert [t.split()[0] for t in pack.translation_menu] == ["To", "Translate"]
    # rules from the PDF, each under its kind
    assert "Every plan must state which rows of local memory it uses." in pack.rules_planning
    assert "A program must never modify its input list in place." in pack.rules_general
    # examples: kept, repaired or dropped by the toy backend, each with its reason
    by_name = {e.name: e for e in pack.examples}
    assert set(by_name) == {
        "Example: squares with a built-in",
        "Example: squares with a local accumulator",
    }
    assert all(e.triggers and e.phase == "code" for e in pack.examples)
    assert "def solution(xs)\n" not in by_name["Example: squares with a local accumulator"].text
    assert (
        s["examples_found"],
        s["examples_kept"],
        s["examples_repaired"],
        s["examples_dropped"],
    ) == (3, 2, 1, 1)
    assert "Example: squares with a built-in [code" in report and "builds and is correct" in report
    assert re.search(
        r"Example: a broken sketch .*DROPPED: does not build \(compile_error: .*"
        r"repaired once, still compile_error",
        report,
    )
    assert s["llm_calls"] == built["requests"]


def test_crawl_stays_inside_its_site_and_limits(built, sites):
    site, other = sites
    assert other.paths == []  # never a request to another site, redirects included
    assert "/robots.txt" in site.paths
    assert "/private/notes.html" not in site.paths  # disallowed by robots.txt
    assert "/deep2.html" in site.paths and "/deep3.html" not in site.paths  # max_depth 2
    assert "/moved.html" in site.paths and "/big.html" in site.paths
    skipped = dict(journal(built["out"]).get_meta("stage/sources")["output"]["skipped"])
    assert skipped[f"{site.url}/big.html"] == "larger than max_page_bytes 100000"
    assert skipped[f"{other.url}/spec.html"] == "another site"
    assert skipped[f"{site.url}/private/notes.html"] == "disallowed by robots.txt"
    assert skipped[f"{site.url}/deep3.html"] == "deeper than max_depth 2"
    texts = " ".join(
        d["text"] for d in journal(built["out"]).get_meta("stage/sources")["output"]["documents"]
    )
    assert "SECRET-NOTES" not in texts and "TOO-DEEP" not in texts and "xxxxxxxx" not in texts


def test_crawl_page_and_byte_limits(sites):
    site, other = sites
    few = anyio.run(crawl, f"{site.url}/index.html", CrawlLimits(max_pages=2))
    assert len(few.pages) == 2
    assert any(reason == "max_pages 2 reached" for _, reason in few.skipped)
    small = anyio.run(crawl, f"{site.url}/index.html", CrawlLimits(max_bytes=3_000))
    assert sum(len(p.data) for p in small.pages) <= 3_000
    assert any(reason == "max_bytes 3000 reached" for _, reason in small.skipped)
    assert other.paths == []


def test_rerun_asks_one_stage_again_and_reuses_the_rest(built, pack_server):
    out = built["out"]
    pack_before = pack_texts(out)
    before = pack_server.request_count
    build(pack_server, out, built["sources"], backend="toy", crawl=LIMITS)
    assert pack_server.request_count == before  # everything read back from the journal
    build(pack_server, out, built["sources"], backend="toy", crawl=LIMITS, reruns=["route"])
    routes = [c for c in journal(out).llm_calls() if c["phase"] == "pack_route"]
    asked = pack_server.request_count - before
    assert asked == len(routes) // 2 >= 1  # route asked again; the same answers keep the rest
    assert pack_texts(out) == pack_before


def test_dry_run_lists_sections_and_estimates_without_llm(pack_server, tmp_path):
    before = pack_server.request_count
    result = anyio.run(
        PackBuilder(options(pack_server, tmp_path / "pack", [DOCS / "vecto-guide.md"])).dry_run
    )
    assert pack_server.request_count == before
    titles = [s["title"] for s in result["sections"]]
    assert "Vecto architecture > Memories" in titles and "License" in titles
    e = result["estimate"]
    assert e["calls"]["route"] == 1 and e["calls"]["extract_at_most"] == len(titles)
    assert e["input_tokens_at_most"] > sum(s["chars"] for s in result["sections"]) // 4


def test_budgets_stop_the_build_and_a_rerun_finishes_it(pack_server, tmp_path):
    sources = [DOCS / "vecto-guide.md", make_pdf(tmp_path / "rules.pdf")]
    before = pack_server.request_count
    with pytest.raises(BuildStopped, match=re.escape("budget.llm_calls reached")):
        build(pack_server, tmp_path / "pack", sources, budget=_budget(llm_calls=2))
    assert pack_server.request_count - before == 2
    spent = sum(
        c["response"]["usage"]["input_tokens"] + c["response"]["usage"]["output_tokens"]
        for c in journal(tmp_path / "pack").llm_calls()
    )
    with pytest.raises(BuildStopped, match=re.escape("budget.tokens reached")):
        build(pack_server, tmp_path / "pack", sources, budget=_budget(tokens=spent + 100))
    assert 2 < pack_server.request_count - before < 6
    summary = build(pack_server, tmp_path / "pack", sources)
    assert summary["llm_calls"] == pack_server.request_count - before  # nothing asked twice
    prices = tmp_path / "prices.toml"
    prices.write_text("[openai-compatible]\nscripted = { input = 100.0, output = 100.0 }\n")
    opts = options(pack_server, tmp_path / "priced", sources, budget=_budget(usd=0.05))
    opts.llm = LLMSettings(max_retries=0, timeout_s=30, prices_file=str(prices))
    with pytest.raises(BuildStopped, match=re.escape("budget.usd reached")):
        anyio.run(PackBuilder(opts).build)
    priced = journal(tmp_path / "priced")
    spent = sum(c["response"]["cost_usd"] for c in priced.llm_calls())
    assert 0.05 <= spent < 0.05 + max(c["response"]["cost_usd"] for c in priced.llm_calls())


def _budget(**kw):
    from autocomp_core.config import BudgetConfig

    return BudgetConfig(**kw)


def test_verbatim_check_refuses_paraphrase():
    index = VerbatimIndex(
        [
            "- `vmac(acc, x, y)` multiplies registers x and y lane by lane\n"
            "  and adds the products to the accumulator register acc."
        ]
    )
    assert index.check(
        "`vmac(acc, x, y)` multiplies registers x and y lane by lane and adds "
        "the products to the accumulator register acc."
    ).ok
    for paraphrase in (
        "`vmac(acc, x, y)` multiplies registers y and x lane by lane",
        "`vmac(acc, x, y)` multiplies the registers x and y lane by lane",
        "vmac multiplies registers x and y lane by lane and adds the products",
    ):
        verdict = index.check(paraphrase)
        assert not verdict.ok and "not in the sources word for word" in verdict.reason
    assert not index.check("vmac").ok  # a bare name proves nothing


def test_pdf_headings_and_code(tmp_path):
    text = pdf_to_markdown(make_pdf(tmp_path / "r.pdf").read_bytes())
    assert "# Vecto programming rules" in text and "# Synchronization instructions" in text
    assert "```\nvload(0, a, 64);\nvsync();\n```" in text


def test_missing_parser_and_bad_sources_are_one_line_errors(tmp_path, monkeypatch):
    (tmp_path / "notes.docx").write_text("x")
    with pytest.raises(SourceError, match="not a Markdown, HTML, text or PDF file"):
        source_files(tmp_path / "notes.docx")
    with pytest.raises(SourceError, match="no such file or folder"):
        source_files(tmp_path / "missing")
    monkeypatch.setitem(__import__("sys").modules, "pypdf", None)
    with pytest.raises(
        SourceError, match=r"reading PDF needs pypdf: pip install 'autocomp-core\[pack\]'"
    ):
        pdf_to_markdown(b"%PDF-1.4")


def test_bad_build_options_are_refused_before_anything_runs(pack_server, tmp_path):
    for kw, message in [
        ({"sources": []}, "no sources given"),
        ({"problem": "sum_squares"}, "--problem: has no effect without --backend"),
        ({"reruns": ["typo"]}, "--rerun typo: not a stage"),
    ]:
        opts = options(pack_server, tmp_path / "p", [DOCS / "vecto-guide.md"])
        for key, value in kw.items():
            setattr(opts, key, value)
        with pytest.raises(BuildError, match=message):
            PackBuilder(opts)
    assert not (tmp_path / "p").exists()


def test_pack_folder_errors(tmp_path):
    (tmp_path / "knowledge.toml").write_text('menus = ["typo"]\n')
    with pytest.raises(PackError, match="unknown key 'menus'"):
        read_pack(tmp_path)
    (tmp_path / "knowledge.toml").write_text('isa = "isa.md"\n')
    with pytest.raises(PackError, match=re.escape("isa names 'isa.md', which is not a file")):
        read_pack(tmp_path)
    (tmp_path / "knowledge.toml").write_text(
        '[[examples]]\nname = "x"\nfile = "x.md"\nphase = "later"\n'
    )
    (tmp_path / "x.md").write_text("x")
    with pytest.raises(PackError, match="phase must be one of plan, code"):
        read_pack(tmp_path)


def test_a_long_architecture_is_condensed(pack_server, tmp_path, monkeypatch):
    from autocomp_core.llm.client import LLMClient
    from autocomp_core.packbuilder import synthesis
    from autocomp_core.packbuilder.journal import BuildJournal
    from autocomp_core.packbuilder.stages import Section

    monkeypatch.setattr(synthesis, "MAX_ARCHITECTURE_CHARS", 200)
    sections = [
        Section(f"s{k}", "d1", "guide.md", f"Unit {k}", f"# Unit {k}\n" + "Fact. " * 40)
        for k in range(3)
    ]
    client = LLMClient(LLMSettings(max_retries=0, timeout_s=30), PROVIDERS)
    client.validate_models([model_of(pack_server)])
    journal = BuildJournal(tmp_path / ".build", client, _budget(), model_of(pack_server))

    async def run():
        async with client:
            return await synthesis.architecture(sections, journal, "Vecto")

    result = anyio.run(run)
    assert result["condensed"] and result["chars_before"] > 700
    assert 0 < len(result["text"]) <= 200
    assert [c["phase"] for c in journal.store.llm_calls()] == ["pack_synthesize"]


def test_a_failed_call_stops_the_build_and_running_again_retries_only_it(tmp_path):
    failing = {"on": True}

    def fault(request):
        return (
            Fault.SERVER_ERROR
            if failing["on"] and "# Copying ISA entries" in request.prompt
            else None
        )

    server = LLMTestServer(lambda req: reply(req.prompt), faults=FaultPlan(force=fault))
    server.start_in_thread()
    try:
        sources = [make_pdf(tmp_path / "rules.pdf")]
        with pytest.raises(
            BuildError,
            match=r"extract: the LLM call for section s\d+ failed "
            r"\(server: .*run the same command again",
        ):
            build(server, tmp_path / "pack", sources)
        routed = [r for r in server.requests if "# Sorting documentation" in r.prompt]
        failing["on"] = False
        summary = build(server, tmp_path / "pack", sources)
        assert summary["isa_entries"] >= 1
        assert [r for r in server.requests if "# Sorting documentation" in r.prompt] == routed
    finally:
        server.stop_thread()
