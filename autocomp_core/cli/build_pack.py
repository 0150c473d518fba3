"""``autocomp-core build-pack``: the knowledge builder's command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from ..packbuilder import STAGES

if TYPE_CHECKING:
    from ..packbuilder.builder import BuildOptions


def _llm_settings(config_file: str | None, overrides: tuple[str, ...]):
    from ..config import apply_override, read_toml, validated
    from ..errors import ConfigError
    from ..llm.settings import LLMSettings

    data: dict[str, Any] = read_toml(config_file) if config_file else {}
    for item in overrides:
        if not item.strip().startswith("llm."):
            raise ConfigError(f"--set {item.split('=')[0]}: build-pack takes llm.* settings only")
        apply_override(data, item)
    return validated(LLMSettings, data.get("llm", {}), "llm")


def _crawl_option(name: str, low: int, default: int, what: str):
    """One of the crawl's bounds: a whole number of at least ``low``."""
    return click.option(
        name, type=click.IntRange(low), default=default, show_default=True, help=f"Crawl: {what}."
    )


@click.command("build-pack")
@click.argument("sources", nargs=-1)
@click.option(
    "--out", type=click.Path(file_okay=False), help="Folder of the pack (and its journal)."
)
@click.option(
    "--inspect",
    "inspect_dir",
    type=click.Path(file_okay=False),
    help="Print the contents and sizes of the pack in this folder, and stop.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Read and split the sources, list the sections and estimate calls and cost.",
)
@click.option("--model", help="Model string for every call (default: as for optimize).")
@click.option("--target", help="The target's name in prompts (default: the --out folder's name).")
@click.option("--backend", help="Check code examples with this backend's eval.")
@click.option("--problem", help="Problem the examples are built as (default: the backend's first).")
@_crawl_option("--max-depth", 0, 2, "links followed from a start URL")
@_crawl_option("--max-pages", 1, 50, "pages per start URL")
@_crawl_option("--max-bytes", 1, 20_000_000, "bytes per start URL, all pages together")
@_crawl_option("--max-page-bytes", 1, 5_000_000, "bytes of one page")
@click.option("--budget-usd", type=click.FloatRange(0))
@click.option("--budget-tokens", type=click.IntRange(0))
@click.option("--budget-calls", type=click.IntRange(0))
@click.option(
    "--rerun",
    multiple=True,
    type=click.Choice(STAGES),
    help="Redo this stage with fresh LLM calls (repeatable); later stages follow.",
)
@click.option("--min-menu-items", type=click.IntRange(1), default=20, show_default=True)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="TOML file whose [llm] section configures the LLM layer.",
)
@click.option("--set", "overrides", multiple=True, metavar="llm.KEY=VALUE")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def build_pack(
    sources: tuple[str, ...],
    out: str | None,
    inspect_dir: str | None,
    dry_run: bool,
    model: str | None,
    target: str | None,
    backend: str | None,
    problem: str | None,
    max_depth: int,
    max_pages: int,
    max_bytes: int,
    max_page_bytes: int,
    budget_usd: float | None,
    budget_tokens: int | None,
    budget_calls: int | None,
    rerun: tuple[str, ...],
    min_menu_items: int,
    config_file: str | None,
    overrides: tuple[str, ...],
    quiet: bool,
    as_json: bool,
) -> None:
    """Build a knowledge pack from a target's documents: SOURCES are Markdown, HTML, text or
    PDF files, folders of them, and URLs (crawled on their own site). A killed build
    resumes where it stopped when the same command is run again."""
    from .common import emit_json, fail

    if inspect_dir:
        _inspect(inspect_dir, as_json)
        return
    if not out:
        fail("--out: required (the folder the pack is written to)")
    from ..config import BudgetConfig
    from ..packbuilder.builder import BuildOptions
    from ..packbuilder.crawl import CrawlLimits

    budget = {"usd": budget_usd, "tokens": budget_tokens, "llm_calls": budget_calls}
    options = BuildOptions(
        sources=list(sources),
        out=Path(out),
        model=model,
        target=target,
        backend=backend,
        problem=problem,
        crawl=CrawlLimits(max_depth, max_pages, max_bytes, max_page_bytes),
        budget=BudgetConfig(**{k: v for k, v in budget.items() if v is not None}),
        reruns=list(rerun),
        min_menu_items=min_menu_items,
        llm=_llm_settings(config_file, overrides),
        quiet=quiet,
    )
    result = _run_builder(options, dry_run)
    if as_json:
        emit_json(result)
    elif dry_run:
        _print_dry_run(result)
    else:
        _print_summary(result, out)


def _inspect(inspect_dir: str, as_json: bool) -> None:
    """``--inspect``: the pack's contents and sizes, and what its build spent."""
    from ..contract.packs import PackError, read_pack
    from ..packbuilder.builder import build_status
    from ..packbuilder.packfiles import describe_pack
    from .common import emit_json, fail

    try:
        text = describe_pack(inspect_dir)
    except PackError as exc:
        fail(str(exc))
    status = build_status(Path(inspect_dir))
    if as_json:
        pack = read_pack(inspect_dir)
        emit_json(
            {
                "pack": {k: v for k, v in vars(pack).items() if k != "examples"},
                "examples": [vars(e) for e in pack.examples],
                "build": status,
            }
        )
        return
    click.echo(text)
    if status:
        click.echo(
            f"\nbuilt from {status['documents']} documents with {status['model']}: "
            f"{status['llm_calls']} LLM calls, {status['tokens']} tokens"
        )


def _run_builder(options: BuildOptions, dry_run: bool) -> dict[str, Any]:
    """The build's summary, or a dry run's estimate; a build error ends the command with
    its one-line message (exit 1 once the build has started, 2 before)."""
    from ..contract.packs import PackError
    from ..packbuilder.answers import BuildError
    from ..packbuilder.builder import BuildStopped, PackBuilder
    from ..packbuilder.sources import SourceError
    from .common import fail, loaded_plugins

    try:
        builder = PackBuilder(options, loaded_plugins())
    except (BuildError, SourceError) as exc:
        fail(str(exc))
    try:
        return anyio.run(builder.dry_run if dry_run else builder.build)
    except SourceError as exc:
        fail(str(exc))
    except BuildStopped as exc:
        fail(f"stopped: {exc}", 1)
    except (BuildError, PackError) as exc:
        fail(str(exc), 1)


def _print_dry_run(result: dict[str, Any]) -> None:
    for doc in result["documents"]:
        click.echo(f"{doc['id']:>5}  {doc['kind']:<8} {doc['bytes']:>9} bytes  {doc['origin']}")
    for origin, reason in result["skipped"]:
        click.echo(f"skipped {origin}: {reason}")
    click.echo("")
    for sec in result["sections"]:
        click.echo(f"{sec['id']:>5}  {sec['chars']:>6} chars  {sec['title']}")
    e = result["estimate"]
    click.echo(
        f"\n{len(result['sections'])} sections. Estimate with {e['model']}: at most "
        f"{e['calls_at_most']} LLM calls ("
        + ", ".join(f"{k.replace('_at_most', '')} {v}" for k, v in e["calls"].items())
        + f"), {e['input_tokens_at_most']} input and {e['output_tokens_at_most']} output "
        f"tokens, at most ${e['cost_usd_at_most']:.4f}"
    )


def _print_summary(s: dict[str, Any], out: str) -> None:
    click.echo(
        f"pack written to {out}: {s['sections']} sections from {s['documents']} documents; "
        f"{s['isa_entries']} ISA entries (all verbatim: "
        f"{s['isa_entries_verbatim'] == s['isa_entries']}, {s['isa_entries_refused']} "
        f"refused), {s['menu_items']} menu items, {s['examples_kept']} examples "
        f"({s['examples_dropped']} dropped); {s['llm_calls']} LLM calls, {s['tokens']} "
        f"tokens, ${s['cost_usd']:.4f}"
    )
    click.echo(f"report: {Path(out) / '.build' / 'report.md'}")
