"""The commands that run a search: ``optimize``, ``optimize-suite``, ``resume``, ``replay``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from ..config import load_config
from .common import config_from_flags, emit_json, run_options, search_options
from .group import cli


@cli.command()
@click.argument("config_file", required=False, type=click.Path(dir_okay=False))
@click.option("--backend", help="Backend name (see `autocomp-core backends`).")
@click.option("--problem", help="Problem id (see `autocomp-core problems BACKEND`).")
@search_options
@click.option("--budget-usd", type=float)
@click.option("--run-dir", type=click.Path(file_okay=False))
@run_options
def optimize(
    config_file: str | None, overrides: tuple[str, ...], quiet: bool, as_json: bool, **flags: Any
) -> None:
    """Run a beam search. Config: CONFIG_FILE, then flags, then --set overrides."""
    from ..run.runner import optimize as run

    config = load_config(config_file, config_from_flags(**flags), list(overrides))
    summary = run(config, progress=not quiet)
    _print_summary(summary, as_json)


def _print_summary(summary: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"run_dir": str(summary.run_dir), **summary.data})
        return
    from ..numbers import metric_text

    d = summary.data
    speed = f" ({d['speedup']:.2f}x)" if d.get("speedup") else ""
    click.echo(
        f"stop reason: {d['stop_reason']}; best {metric_text(d['best_score'])} {d['unit']}{speed}; "
        f"{d['llm_calls']} LLM calls, ${d['cost_usd']:.4f}; "
        f"sandbox isolation: {d.get('isolation')}"
    )
    if d.get("stop_detail") and d["stop_reason"] == "stop_at_bound":
        click.echo(f"stopped: {d['stop_detail']}")
    elif d.get("stop_detail"):
        click.echo(
            f"stopped: {d['stop_detail']}; continue with: autocomp-core resume {summary.run_dir}"
        )
    click.echo(f"run directory: {summary.run_dir} (report.md, summary.json, best program)")


@cli.command(name="optimize-suite")
@click.argument("problems", nargs=-1)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="Configuration every problem shares (a run config without problem).",
)
@click.option("--backend", help="Backend name (see `autocomp-core backends`).")
@click.option("--all", "every", is_flag=True, help="Every problem the backend ships.")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of problem files the backend loads (KernelBench files for cuda).",
)
@click.option(
    "--suite-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the suite goes: one run directory per problem, and the summary.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Problems searched at once (default: at least 4, more with more slots).",
)
@search_options
@click.option("--budget-usd", type=float, help="For the whole suite.")
@run_options
def optimize_suite(
    problems: tuple[str, ...],
    config_file: str | None,
    every: bool,
    folder: Path | None,
    suite_dir: Path,
    concurrency: int | None,
    overrides: tuple[str, ...],
    quiet: bool,
    as_json: bool,
    **flags: Any,
) -> None:
    """Optimize many problems of one backend: PROBLEMS (ids), --all, or --dir; concurrent
    searches sharing one LLM client, budget and executor. Continue with `resume SUITE_DIR`."""
    from ..config import merge_config
    from ..suite import optimize_suite as run, select_problems

    data = merge_config(config_file, config_from_flags(**flags), list(overrides))
    chosen = select_problems(data, list(problems), every, folder)
    _print_suite(anyio.run(lambda: run(data, chosen, suite_dir, concurrency, not quiet)), as_json)


def _print_suite(result: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"suite_dir": str(result.suite_dir), **result.data})
        return
    from ..suite import SUMMARY_MD

    click.echo((result.suite_dir / SUMMARY_MD).read_text(), nl=False)
    click.echo(
        f"suite directory: {result.suite_dir} (summary.md, summary.json, one run "
        "directory per problem; `autocomp-core report DIR --html` for one page)"
    )


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Raise a budget or change llm.*/evaluation.*/executor.* settings (repeatable).",
)
@click.option("--quiet", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
def resume(run_dir: str, overrides: tuple[str, ...], quiet: bool, as_json: bool) -> None:
    """Continue a run, or every run of a suite, after a crash, Ctrl-C or budget stop;
    repeats no answered call and no finished evaluation."""
    from ..run.runner import resume_async
    from ..suite import is_suite, resume_suite

    if is_suite(run_dir):
        _print_suite(
            anyio.run(lambda: resume_suite(Path(run_dir), list(overrides), not quiet)), as_json
        )
        return
    _print_summary(
        anyio.run(lambda: resume_async(run_dir, progress=not quiet, overrides=list(overrides))),
        as_json,
    )


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--into", type=click.Path(file_okay=False), help="Directory of the replayed run.")
@click.option(
    "--reevaluate",
    is_flag=True,
    help="Measure every program again instead of reusing recorded evaluations.",
)
@click.option("--quiet", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
def replay(run_dir: str, into: str | None, reevaluate: bool, quiet: bool, as_json: bool) -> None:
    """Re-run a recorded run from its recorded LLM answers (no LLM is called)."""
    from ..run.runner import replay_async

    _print_summary(
        anyio.run(lambda: replay_async(run_dir, into, progress=not quiet, reevaluate=reevaluate)),
        as_json,
    )
