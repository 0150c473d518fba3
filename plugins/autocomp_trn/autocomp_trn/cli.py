"""``autocomp-core trn ...``: the Trainium plugin's own commands.

    autocomp-core trn simulate-diff [--probe 'tensor_*'] [--problem 'tutorial/*'] [--generation trn2]
    autocomp-core trn simulate-diff --list

``simulate-diff`` compares the emulator with the Neuron SDK's CPU simulator (``nki.simulate``)
on the single-instruction probes and the current-API tutorial kernels and prints one row per
output: shape, dtype, the largest absolute and relative difference, agree or differ. Exit 0 when
everything compared agrees, 1 when something differs or failed, 2 when the SDK is not installed
(nothing is compared then: there is no pass without the simulator).
"""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

import click

from . import probes, simdiff
from .emulator.hardware import GENERATIONS


@click.group(name="trn")
def trn() -> None:
    """Trainium (NKI) plugin commands."""


@trn.command(name="simulate-diff")
@click.option(
    "--probe",
    "probe_patterns",
    multiple=True,
    default=("*",),
    show_default=True,
    help="Probes to run (glob on the probe name; repeatable).",
)
@click.option(
    "--problem",
    "problem_patterns",
    multiple=True,
    default=("tutorial/*",),
    show_default=True,
    help="Problems whose current-API baseline also runs (glob; repeatable; 'none' for none).",
)
@click.option(
    "--generation", type=click.Choice(sorted(GENERATIONS)), default="trn2", show_default=True
)
@click.option("--seeds", type=click.IntRange(1, 8), default=1, show_default=True)
@click.option("--list", "list_only", is_flag=True, help="List the probes and exit.")
@click.option("--json", "as_json", is_flag=True, help="Rows and counts as JSON.")
def simulate_diff(
    probe_patterns: tuple[str, ...],
    problem_patterns: tuple[str, ...],
    generation: str,
    seeds: int,
    list_only: bool,
    as_json: bool,
) -> None:
    """Compare the emulator with nki.simulate, instruction by instruction."""
    chosen = [
        p for p in probes.PROBES if any(fnmatch.fnmatchcase(p.name, g) for g in probe_patterns)
    ]
    if list_only:
        for p in chosen:
            click.echo(f"{p.name:<28} nisa.{p.instruction:<24} {' '.join(p.generations)}")
        return
    missing = simdiff.sdk_missing()
    if missing:
        raise click.exceptions.Exit(_fail(missing))
    jobs = [
        simdiff.Job(f"probe/{p.name}", p.spec(), p.code)
        for p in chosen
        if generation in p.generations
    ]
    extra, skipped = simdiff.problem_jobs(tuple(g for g in problem_patterns if g != "none"))
    skipped += [
        simdiff.Row(
            f"probe/{p.name}",
            "skipped",
            list(p.out[0]),
            p.out[1],
            note=f"nisa.{p.instruction} is not on {generation}",
        )
        for p in chosen
        if generation not in p.generations
    ]
    if not jobs + extra:
        raise click.UsageError("no probe or problem matches")
    with tempfile.TemporaryDirectory(prefix="autocomp-trn-simdiff-") as work:
        try:
            rows = simdiff.run_check(
                jobs + extra, list(range(1, seeds + 1)), generation, Path(work)
            )
        except RuntimeError as exc:  # the child found no usable nki.simulate
            raise click.exceptions.Exit(_fail(str(exc))) from exc
    text, code = simdiff.report(rows + skipped, as_json)
    click.echo(text)
    raise click.exceptions.Exit(code)


def _fail(message: str) -> int:
    click.echo(f"trn simulate-diff: {message}", err=True)
    return simdiff.NO_SDK
