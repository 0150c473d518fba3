"""``autocomp-core cuda ...``: suite results and the problem-quality gate from the command line.

    autocomp-core cuda suite CANDIDATES_DIR [--problem 'L2/*'] [--json] [--out results.json]
    autocomp-core cuda suite --eager            # each problem's own PyTorch program as the candidate
    autocomp-core cuda gate [PROBLEM_OR_FILE ...] [--problem 'kb/*'] [--jobs 2] [--report gate.md]

A candidate for problem ``L2/bias_gelu_sum`` is ``CANDIDATES_DIR/L2/bias_gelu_sum.py`` or
``CANDIDATES_DIR/L2_bias_gelu_sum.py``; a problem with no file counts as missing (0 in
every ``fast_p``, as KernelBench counts it).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import sys
import time
from pathlib import Path

import click
from autocomp_core import ConfigError, make_backend, parse_assignments

from . import gate, suite as suite_results
from .harness import Verdict
from .problemset import baseline_source


def candidate_file(folder: Path, problem_id: str) -> Path | None:
    for path in (folder / f"{problem_id}.py", folder / f"{problem_id.replace('/', '_')}.py"):
        if path.is_file():
            return path
    return None


def _selected(backend, patterns: tuple[str, ...]) -> list[str]:
    ids = [p.id for p in backend.problems()]
    if not patterns:
        return ids
    chosen = [i for i in ids if any(fnmatch.fnmatchcase(i, pat) for pat in patterns)]
    if not chosen:
        raise ConfigError(f"--problem {' '.join(patterns)}: matches none of {len(ids)} problems")
    return chosen


def _progress(done: int, total: int, problem: str, verdict: Verdict | None) -> None:
    if verdict is None:
        what = "missing"
    else:
        speed = f" {verdict.speedup:.2f}x" if verdict.speedup else ""
        flags = f" [{', '.join(verdict.flags)}]" if verdict.flags else ""
        what = f"{verdict.status}{speed}{flags}"
        if verdict.sizes_auto:
            what += (
                "  (sizes: "
                + (", ".join(f"{k}={v}" for k, v in verdict.sizes.items()) or "the file's own")
                + ")"
            )
    click.echo(f"[{done}/{total}] {problem}: {what}", err=True)


async def _evaluate_gated(backend, problem: str, code: str, seed: int) -> Verdict:
    """As the backend's ``evaluate``: a problem the gate refuses gets no verdict on a program
    (``problem_gate = "refuse"``: an infra_error saying why) or a flagged one (``"warn"``)."""
    from .backend import gate_refusal, gate_warning

    spec = backend.spec(problem)
    report = await backend.gate_report(spec)
    if not report.judgeable and backend.options.problem_gate == "refuse":
        return Verdict("infra_error", gate_refusal(report).feedback.split("\n", 1)[1])
    verdict = await backend.harness.evaluate(spec, code, seed=seed)
    if not report.judgeable:
        verdict.notes.insert(0, gate_warning(report))
        verdict.flags.append("problem_failed_gate")
    return verdict


async def _run_suite(
    backend, problems: list[str], sources: dict[str, str | None], seed: int, quiet: bool
) -> dict[str, Verdict | None]:
    harness = backend.harness
    # References and builds of the next problems overlap with timing on the device slots.
    gate = asyncio.Semaphore(harness.device_slots + 1)
    verdicts: dict[str, Verdict | None] = {}
    done = 0

    async def one(problem: str) -> None:
        nonlocal done
        code = sources[problem]
        verdict = None
        if code is not None:
            async with gate:
                try:
                    verdict = await _evaluate_gated(backend, problem, code, seed)
                except (
                    Exception
                ) as exc:  # the harness's fault (a reference that fails here): not fatal
                    verdict = Verdict(
                        "infra_error", f"the evaluator failed: {type(exc).__name__}: {exc}"
                    )
        verdicts[problem] = verdict
        done += 1
        if not quiet:
            _progress(done, len(problems), problem, verdict)

    async with backend:  # its warm workers end with the suite
        await asyncio.gather(*(one(p) for p in problems))
    return {p: verdicts[p] for p in problems}


@click.group(name="cuda")
def cuda() -> None:
    """The cuda backend's own tools: suite results (fast_p) and the problem-quality gate."""


@cuda.command(name="suite")
@click.argument(
    "candidates", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--eager", is_flag=True, help="Evaluate each problem's own PyTorch program (no candidates dir)."
)
@click.option(
    "--problem", "patterns", multiple=True, metavar="GLOB", help="Only these problems (repeatable)."
)
@click.option(
    "--hw",
    "hardware",
    multiple=True,
    metavar="KEY=VALUE",
    help="Hardware config (device=cuda, gpus=[0,1]).",
)
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the results as JSON here.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table."
)
@click.option("--quiet", is_flag=True, help="No per-problem progress lines.")
def suite_command(
    candidates: Path | None,
    eager: bool,
    patterns: tuple[str, ...],
    hardware: tuple[str, ...],
    options: tuple[str, ...],
    seed: int,
    out: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Evaluate one candidate per problem; print fast_p (ours and KernelBench-compatible)."""
    if (candidates is None) == (not eager):
        raise ConfigError("give a CANDIDATES directory or --eager (not both)")
    backend = make_backend("cuda", parse_assignments(hardware), parse_assignments(options))
    problems = _selected(backend, patterns)
    sources: dict[str, str | None] = {}
    for problem in problems:
        if eager:
            sources[problem] = baseline_source(backend.spec(problem))
        else:
            path = candidate_file(candidates, problem)
            sources[problem] = path.read_text() if path else None
    if not eager and not any(sources.values()):
        raise ConfigError(
            f"{candidates}: no candidate file for any of {len(problems)} problems "
            f"(expected e.g. {problems[0]}.py or {problems[0].replace('/', '_')}.py)"
        )
    verdicts = asyncio.run(_run_suite(backend, problems, sources, seed, quiet))
    summary = suite_results.summary(verdicts)
    summary["device"] = backend.settings.device
    summary["size"] = backend.settings.size
    if out is not None:
        out.write_text(json.dumps(summary, indent=2, default=str))
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        click.echo(suite_results.format_table(verdicts))
        geomean = summary["geomean_speedup_scored"]
        click.echo(
            f"geometric-mean speedup of scored candidates: {geomean:.3f}x"
            if geomean
            else "no scored candidate (correct, unflagged, timed)"
        )


@cuda.command(name="gate")
@click.argument("problems", nargs=-1)
@click.option(
    "--problem", "patterns", multiple=True, metavar="GLOB", help="Only these problems (repeatable)."
)
@click.option("--hw", "hardware", multiple=True, metavar="KEY=VALUE", help="Hardware config.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Problems checked at once (each in its own reference worker).",
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a Markdown report: totals per reason, then one row per problem.",
)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", is_flag=True, help="No per-problem progress lines.")
def gate_command(
    problems: tuple[str, ...],
    patterns: tuple[str, ...],
    hardware: tuple[str, ...],
    options: tuple[str, ...],
    jobs: int,
    report: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run the problem-quality gate (all problems, or the given ids / reference files); exit 1 if any fails."""
    if jobs > 1 and "OMP_NUM_THREADS" not in os.environ:  # the workers share the cores
        os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))
    backend = make_backend("cuda", parse_assignments(hardware), parse_assignments(options))
    ids = list(problems) or _selected(backend, patterns)
    for ref in ids:
        try:
            backend.spec(ref)
        except KeyError as exc:
            raise ConfigError(f"problem: {exc.args[0]}") from None
    started = time.perf_counter()

    async def run() -> list[gate.GateReport]:
        slots = asyncio.Semaphore(jobs)
        done = 0

        async def one(ref: str) -> gate.GateReport:
            nonlocal done
            async with slots:
                result = await backend.check_problem(ref)
            done += 1
            if not quiet:
                click.echo(f"[{done}/{len(ids)}] {_gate_line(result)}", err=True)
            return result

        async with backend:  # its warm workers end with the gate
            return list(await asyncio.gather(*(one(ref) for ref in ids)))

    reports = asyncio.run(run())
    wall = time.perf_counter() - started
    if report is not None:
        names = {ref: backend.spec(ref).path.stem for ref in ids}
        report.write_text(
            gate.markdown_report(
                reports, names, wall, jobs, backend.settings.device, backend.settings.size
            )
        )
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=2, default=str))
    else:
        for r in reports:
            click.echo(_gate_line(r))
        click.echo(gate.totals_line(reports, wall))
    sys.exit(0 if all(r.passed for r in reports) else 1)


def _gate_line(r: gate.GateReport) -> str:
    line = f"{'pass   ' if r.passed else 'REFUSED'} {r.problem} ({r.seconds:.1f} s)"
    if r.details.get("sizes_auto"):
        line += f"\n        {gate.sizes_text(r)}"
    return line + "".join(f"\n        {reason}" for reason in r.reasons)
