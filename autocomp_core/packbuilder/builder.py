"""Runs the build: each stage in turn, each reused from the journal while its inputs hold,
then the pack written, read back with the plugins' loader, and a report beside it."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..config import BudgetConfig
from ..contract.backend import Backend, Example, KnowledgePack, Problem
from ..contract.plugins import PluginRegistry, build_registry, load_problem
from ..contract.resources import local_slots
from ..engine.journal import Evaluator
from ..ledger.accounting import BudgetReached
from ..llm.client import LLMClient, default_models
from ..llm.settings import LLMSettings
from . import STAGES, synthesis
from .answers import BuildError
from .checking import check_examples
from .crawl import CrawlLimits, crawl
from .journal import BuildJournal, gather
from .packfiles import write_pack
from .sources import Document, kind_of_path, source_files, to_markdown
from .stages import (
    MAX_SECTION_CHARS,
    ROUTE_PREVIEW_CHARS,
    Section,
    extract,
    isa_markdown,
    route,
    route_batches,
    split_documents,
)
from .verbatim import VerbatimIndex

BUILD_DIR = ".build"
#: prompt text around the documentation in one call, for estimates (characters)
PROMPT_OVERHEAD_CHARS = 1_500
CHARS_PER_TOKEN = 4


class BuildStopped(BuildError):
    """A budget stopped the build; the journal keeps everything done so far."""


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


@dataclass
class BuildOptions:
    sources: list[str]
    out: Path
    model: str | None = None
    target: str | None = None  # the target's name in prompts and pack; default: out's name
    backend: str | None = None  # check examples with this backend
    problem: str | None = None  # ... as programs for this problem (default: its first)
    crawl: CrawlLimits = field(default_factory=CrawlLimits)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    reruns: list[str] = field(default_factory=list)
    min_menu_items: int = 20
    llm: LLMSettings = field(default_factory=LLMSettings)
    quiet: bool = False

    @property
    def target_name(self) -> str:
        return self.target or Path(self.out).resolve().name


class PackBuilder:
    def __init__(self, options: BuildOptions, plugins: PluginRegistry | None = None) -> None:
        """``plugins``: where the backend (``--backend``) and the LLM providers come from
        (default: the installed plugins)."""
        for stage in options.reruns:
            if stage not in STAGES:
                raise BuildError(f"--rerun {stage}: not a stage (stages: {', '.join(STAGES)})")
        if not options.sources:
            raise BuildError("no sources given (files, folders or URLs)")
        self.o = options
        self.target = options.target_name
        self._source_inputs()  # a missing or unreadable file is reported before anything else
        self.plugins = plugins or build_registry()
        self.backend: Backend | None = None
        self.problem: Problem | None = None
        if options.backend:
            self.backend = self.plugins.make_backend(options.backend)
            problems = self.backend.problems()
            if not options.problem and not problems:
                raise BuildError(
                    f"--backend {options.backend}: the backend has no problem to "
                    "build examples for; name one with --problem"
                )
            self.problem = load_problem(self.backend, options.problem or problems[0].id)
        elif options.problem:
            raise BuildError("--problem: has no effect without --backend")
        self.model = options.model or default_models(options.llm)[0]

    # -- stages -------------------------------------------------------------------------
    def _source_inputs(self) -> list[Any]:
        inputs: list[Any] = []
        for source in self.o.sources:
            if is_url(source):
                inputs.append(["url", source, asdict(self.o.crawl)])
            else:
                for f in source_files(Path(source)):
                    stat = f.stat()
                    inputs.append(["file", str(f), stat.st_size, stat.st_mtime_ns])
        return inputs

    async def sources(self, journal: BuildJournal) -> dict[str, Any]:
        inputs = self._source_inputs()
        key = journal.key("sources", inputs)
        cached = journal.cached("sources", key)
        if cached is not None:
            return cached
        docs: list[Document] = []
        skipped: list[list[str]] = []

        def add(origin: str, kind: str, data: bytes) -> None:
            text = to_markdown(kind, data, origin)
            if text.strip():
                docs.append(Document(f"d{len(docs) + 1}", origin, kind, text, len(data)))
            else:
                skipped.append([origin, "no text"])

        for item in inputs:
            if item[0] == "file":
                path = Path(item[1])
                kind = kind_of_path(path)
                assert kind is not None, path  # source_files lists files of known kinds only
                add(item[1], kind, path.read_bytes())
                continue
            result = await crawl(
                item[1], self.o.crawl, on_page=lambda url: journal.say(f"sources: fetched {url}")
            )
            for page in result.pages:
                add(page.url, page.kind, page.data)
            skipped += [list(pair) for pair in result.skipped]
        if not docs:
            raise BuildError("sources: no document with any text was found")
        journal.say(f"sources: {len(docs)} documents, {sum(d.size for d in docs)} bytes")
        return journal.save(
            "sources", key, {"documents": [d.to_dict() for d in docs], "skipped": skipped}
        )

    def split(self, journal: BuildJournal, documents: list[dict]) -> list[Section]:
        key = journal.key("split", documents)
        cached = journal.cached("split", key)
        if cached is None:
            sections = split_documents([Document(**d) for d in documents])
            cached = journal.save("split", key, [s.to_dict() for s in sections])
            journal.say(f"split: {len(sections)} sections")
        return [Section(**s) for s in cached]

    async def stage(self, journal: BuildJournal, name: str, inputs: Any, compute) -> Any:
        """A stage's output: from the journal while its inputs hold, else computed."""
        key = journal.key(name, [self.target, inputs])
        cached = journal.cached(name, key)
        if cached is not None:
            return cached
        try:
            return journal.save(name, key, await compute())
        except BudgetReached as exc:
            raise BuildStopped(
                f"{name}: {exc.reason} reached; every answer so far is kept in "
                f"the journal: raise the budget and run the same command again "
                "to continue"
            ) from None

    # -- the build ----------------------------------------------------------------------
    def journal(self, client: LLMClient | None) -> BuildJournal:
        journal = BuildJournal(
            Path(self.o.out) / BUILD_DIR,
            client,
            self.o.budget,
            self.model,
            self.o.llm.max_tokens,
            quiet=self.o.quiet,
        )
        for stage in self.o.reruns:
            journal.rerun(stage)
        return journal

    async def build(self) -> dict[str, Any]:
        client = LLMClient(self.o.llm, self.plugins.llm_providers())
        client.validate_models([self.model])
        journal = self.journal(client)
        journal.store.set_meta(
            "build",
            {
                "sources": self.o.sources,
                "target": self.target,
                "model": self.model,
                "backend": self.o.backend,
            },
        )
        try:
            async with client:
                summary = await self._build(journal)
        finally:
            journal.close()
        return summary

    async def _build(self, journal: BuildJournal) -> dict[str, Any]:
        read = await self.sources(journal)
        docs = read["documents"]
        sections = self.split(journal, docs)
        by_id = {s.id: s for s in sections}
        routed = await self.stage(
            journal,
            "route",
            [s.to_dict() for s in sections],
            lambda: route(sections, journal, self.target),
        )

        def routed_to(category: str) -> list[Section]:
            return [s for s in sections if category in routed["routes"][s.id]]

        index = VerbatimIndex([d["text"] for d in docs])
        isa_sections = routed_to("isa")
        extracted = await self.stage(
            journal,
            "extract",
            [s.to_dict() for s in isa_sections],
            lambda: extract(isa_sections, journal, self.target, index),
        )
        parts = {c: routed_to(c) for c in ("architecture", "optimization", "rules", "examples")}
        synth = await self.stage(
            journal,
            "synthesize",
            [
                {c: [s.id for s in secs] for c, secs in parts.items()},
                extracted["entries"],
                [s.to_dict() for s in sections],
                self.o.min_menu_items,
            ],
            lambda: self.synthesize(journal, parts, isa_sections, extracted["entries"]),
        )
        shortfall = self.shortfall(sections, routed, extracted, synth)
        if shortfall:
            summary = self.summary(read, sections, routed, extracted, synth, None, journal, index)
            summary["failure"] = shortfall
            write_report(Path(self.o.out) / BUILD_DIR, summary, by_id, extracted, synth, None)
            raise BuildError(
                f"build failed, no pack written: {shortfall} "
                f"(details: {Path(self.o.out) / BUILD_DIR / 'report.md'})"
            )
        examples = synth["examples"]
        checked = None
        if self.backend is not None and self.problem is not None:
            backend, problem = self.backend, self.problem
            checked = await self.stage(
                journal,
                "check",
                [examples, backend.name, problem.id, backend.hardware.model_dump(mode="json")],
                lambda: self.check(journal, examples, backend, problem),
            )
            examples = checked["examples"]
        pack = KnowledgePack(
            architecture=synth["architecture"]["text"],
            isa=isa_markdown(extracted["entries"], self.target),
            rules_general=synth["rules"]["general"],
            rules_planning=synth["rules"]["planning"],
            rules_coding=synth["rules"]["coding"],
            menu=synth["menus"]["menu"],
            translation_menu=synth["menus"]["translation_menu"],
            examples=[Example(e["name"], e["text"], e["triggers"], e["phase"]) for e in examples],
        )
        write_pack(
            pack,
            self.o.out,
            comment=(
                f"Knowledge pack for {self.target}, built by `autocomp-core build-pack` from "
                f"{len(docs)} documents ({BUILD_DIR}/report.md tells how)."
            ),
        )
        summary = self.summary(read, sections, routed, extracted, synth, checked, journal, index)
        write_report(Path(self.o.out) / BUILD_DIR, summary, by_id, extracted, synth, checked)
        journal.say(f"wrote the pack to {self.o.out}")
        return summary

    def shortfall(
        self,
        sections: list[Section],
        routed: dict[str, Any],
        extracted: dict[str, Any],
        synth: dict[str, Any],
    ) -> str:
        """What the pack would lack (no ISA entry, a menu under ``--min-menu-items``) and
        its likely cause, in one line; empty when nothing is missing. A pack without them
        would send prompts with no instruction and no strategy to choose from."""
        missing: list[tuple[str, str]] = []
        unrouted = len(routed["unrouted"])
        weak_model = (
            f"the model left {unrouted} of {len(sections)} sections unrouted: it may be too "
            "weak to follow the prompts; try a stronger --model with --rerun route"
        )
        if not extracted["entries"]:
            isa_sections = sum("isa" in cats for cats in routed["routes"].values())
            if unrouted and unrouted * 2 >= len(sections):
                cause = weak_model
            elif not isa_sections:
                cause = (
                    "no section was routed to isa: the documents may describe no instruction "
                    "or API, or the model misrouted them"
                )
            elif extracted["refused"]:
                cause = (
                    f"all {len(extracted['refused'])} entries proposed were refused by the "
                    "verbatim check"
                )
            elif extracted["unreadable"]:
                cause = (
                    f"the answers for {len(extracted['unreadable'])} of {isa_sections} ISA "
                    "sections were not the JSON asked for"
                )
            else:
                cause = f"the model found no entry in the {isa_sections} ISA sections"
            missing.append(("the ISA is empty", cause))
        menu = len(synth["menus"]["menu"])
        if menu < self.o.min_menu_items:
            cause = (
                weak_model
                if unrouted and unrouted * 2 >= len(sections)
                else "the documents and the top-up rounds gave too few distinct strategies; "
                "lower --min-menu-items or add documents with optimization advice"
            )
            missing.append(
                (f"the menu has {menu} of --min-menu-items {self.o.min_menu_items} items", cause)
            )
        if len({cause for _, cause in missing}) == 1:  # one cause, said once
            return f"{' and '.join(what for what, _ in missing)} ({missing[0][1]})"
        return "; ".join(f"{what} ({cause})" for what, cause in missing)

    async def synthesize(
        self,
        journal: BuildJournal,
        parts: dict[str, list[Section]],
        isa_sections: list[Section],
        entries: list[dict[str, str]],
    ) -> dict[str, Any]:
        arch = parts["architecture"]
        summary = synthesis.target_summary("\n\n".join(s.text for s in arch), entries)
        results: list[Any] = await gather(
            [
                lambda: synthesis.architecture(arch, journal, self.target),
                # without optimization advice, strategies are drawn from the hardware description
                lambda: synthesis.menus(
                    parts["optimization"] or arch + isa_sections,
                    journal,
                    self.target,
                    summary,
                    self.o.min_menu_items,
                ),
                lambda: synthesis.rules(parts["rules"] or arch, journal, self.target),
                lambda: synthesis.examples(parts["examples"], journal, self.target),
            ]
        )
        journal.say(f"synthesize: {len(results[1]['menu'])} menu items, {len(results[3])} examples")
        return dict(zip(("architecture", "menus", "rules", "examples"), results, strict=True))

    async def check(
        self,
        journal: BuildJournal,
        examples: list[dict[str, Any]],
        backend: Backend,
        problem: Problem,
    ) -> dict[str, Any]:
        evaluator = Evaluator(
            backend,
            problem,
            journal.store,
            journal.ledger,
            journal.budget,
            slots=local_slots(backend.resources()),
            timeout_s=120.0,
            seed=0,
            want_feedback=False,
        )
        async with backend:  # the backend's lifecycle: opened and closed around its work
            return await check_examples(examples, backend, problem, evaluator, journal, self.target)

    # -- numbers ------------------------------------------------------------------------
    def summary(
        self, read, sections, routed, extracted, synth, checked, journal, index: VerbatimIndex
    ) -> dict[str, Any]:
        counts = Counter(c for cats in routed["routes"].values() for c in cats)
        entries = extracted["entries"]
        led = journal.ledger
        menus = synth["menus"]
        return {
            "target": self.target,
            "model": self.model,
            "documents": len(read["documents"]),
            "skipped_sources": len(read["skipped"]),
            "sections": len(sections),
            "routed": {
                c: counts.get(c, 0)
                for c in ("architecture", "isa", "optimization", "rules", "examples", "irrelevant")
            },
            "unrouted": len(routed["unrouted"]),
            "isa_entries": len(entries),
            "isa_entries_verbatim": sum(index.check(e["text"]).ok for e in entries),
            "isa_entries_refused": len(extracted["refused"]),
            "isa_categories": len({e["category"].lower() for e in entries}),
            "isa_unreadable_answers": len(extracted["unreadable"]),
            "architecture_condensed": synth["architecture"]["condensed"],
            "menu_items": len(menus["menu"]),
            "menu_proposed": menus["proposed"],
            "menu_near_duplicates_merged": len(menus["merged"]),
            "menu_top_up_rounds": menus["top_up_rounds"],
            "menu_short_of_minimum": len(menus["menu"]) < self.o.min_menu_items,
            "translation_menu_items": len(menus["translation_menu"]),
            "rules": {k: len(v) for k, v in synth["rules"].items()},
            "examples_found": len(synth["examples"]),
            "examples_kept": len(checked["examples"]) if checked else len(synth["examples"]),
            "examples_repaired": sum(
                e.get("check", "").startswith("repaired") for e in checked["examples"]
            )
            if checked
            else 0,
            "examples_dropped": len(checked["dropped"]) if checked else 0,
            "examples_checked_with": self.o.backend,
            "llm_calls": led.llm_calls,
            "input_tokens": led.llm.total.input_tokens,
            "output_tokens": led.llm.total.output_tokens,
            "tokens": led.tokens,
            "cost_usd": round(led.cost_usd, 6),
        }

    # -- dry run ------------------------------------------------------------------------
    async def dry_run(self) -> dict[str, Any]:
        """Read and split the sources (journaled), list the sections and estimate the
        build's calls, tokens and cost without calling any LLM."""
        journal = self.journal(None)
        try:
            read = await self.sources(journal)
            sections = self.split(journal, read["documents"])
        finally:
            journal.close()
        chars = sum(len(s.text) for s in sections)
        code_sections = sum("```" in s.text or "~~~" in s.text for s in sections)
        batches = route_batches(sections)
        synth_calls = (
            3 * math.ceil(chars / synthesis.PASSAGE_BATCH_CHARS) + synthesis.MORE_MENU_ROUNDS + 1
        )
        calls = {
            "route": len(batches),
            "extract_at_most": len(sections),
            "synthesize_at_most": synth_calls,
            "check_at_most": code_sections if self.backend else 0,
        }
        overhead = PROMPT_OVERHEAD_CHARS * sum(calls.values())
        preview = sum(min(len(s.text), ROUTE_PREVIEW_CHARS) for s in sections)
        input_chars = overhead + preview + chars + 3 * chars
        output_chars = 20 * len(sections) + chars + 4_000 * synth_calls
        tokens_in, tokens_out = (
            math.ceil(input_chars / CHARS_PER_TOKEN),
            math.ceil(output_chars / CHARS_PER_TOKEN),
        )
        client = LLMClient(self.o.llm, self.plugins.llm_providers())
        ref, spec = client.resolve(self.model)
        return {
            "documents": [
                {"id": d["id"], "origin": d["origin"], "kind": d["kind"], "bytes": d["size"]}
                for d in read["documents"]
            ],
            "skipped": read["skipped"],
            "sections": [
                {"id": s.id, "title": s.title, "chars": len(s.text), "origin": s.origin}
                for s in sections
            ],
            "estimate": {
                "model": self.model,
                "calls": calls,
                "calls_at_most": sum(calls.values()),
                "input_tokens_at_most": tokens_in,
                "output_tokens_at_most": tokens_out,
                "cost_usd_at_most": round(
                    client.prices.cost(spec.name, ref.model, tokens_in, tokens_out), 4
                ),
                "max_section_chars": MAX_SECTION_CHARS,
            },
        }


def write_report(
    build_dir: Path,
    summary: dict[str, Any],
    by_id: dict[str, Section],
    extracted: dict[str, Any],
    synth: dict[str, Any],
    checked: dict[str, Any] | None,
) -> None:
    """``summary.json`` (the numbers) and ``report.md`` (the numbers and every refusal,
    merge and dropped example with its reason)."""
    (build_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    s = summary
    lines = [
        f"# Knowledge pack build: {s['target']}",
        "",
        f"- documents: {s['documents']} ({s['skipped_sources']} sources skipped)",
        f"- sections: {s['sections']}; routed: "
        + ", ".join(f"{c} {n}" for c, n in s["routed"].items())
        + f"; unrouted {s['unrouted']}",
        f"- ISA entries: {s['isa_entries']} in {s['isa_categories']} categories, "
        f"{s['isa_entries_verbatim']} verified verbatim; {s['isa_entries_refused']} refused",
        f"- menu: {s['menu_items']} items ({s['menu_proposed']} proposed, "
        f"{s['menu_near_duplicates_merged']} near-duplicates merged, "
        f"{s['menu_top_up_rounds']} top-up rounds); translation menu: "
        f"{s['translation_menu_items']}",
        "- rules: " + ", ".join(f"{k} {n}" for k, n in s["rules"].items()),
        f"- examples: {s['examples_found']} found, {s['examples_kept']} kept "
        f"({s['examples_repaired']} repaired), {s['examples_dropped']} dropped"
        + (
            f" (checked with {s['examples_checked_with']})"
            if s["examples_checked_with"]
            else " (not checked: no --backend)"
        ),
        f"- LLM: {s['llm_calls']} calls, {s['input_tokens']} input and "
        f"{s['output_tokens']} output tokens, ${s['cost_usd']:.4f} ({s['model']})",
    ]
    if s.get("failure"):
        lines[1:1] = ["", f"**Build failed, no pack written**: {s['failure']}"]
    if extracted["refused"]:
        lines += ["", "## ISA entries refused", ""]
        lines += [
            f"- {e['name'] or '(unnamed)'} (section {e['section']}: "
            f"{by_id[e['section']].title}): {e['reason']}"
            for e in extracted["refused"]
        ]
    if synth["menus"]["merged"]:
        lines += ["", "## Menu items merged as near-duplicates", ""]
        lines += [f'- "{a}" repeats "{b}"' for a, b in synth["menus"]["merged"]]
    examples = checked["examples"] + checked["dropped"] if checked else synth["examples"]
    if examples:
        lines += ["", "## Examples", ""]
        lines += [
            f"- {e['name']} [{e['phase']}; triggers: {', '.join(e['triggers'])}]: "
            f"{(e.get('dropped') and 'DROPPED: ' + e['dropped']) or e.get('check', 'kept')}"
            for e in examples
        ]
    (build_dir / "report.md").write_text("\n".join(lines) + "\n")


def build_status(out: Path) -> dict[str, Any] | None:
    """The last build's numbers, if the folder was built by build-pack."""
    path = Path(out) / BUILD_DIR / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None
