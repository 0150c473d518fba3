"""The command line of a small scripted run, as plugin tests and checks write it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def optimize_args(
    backend: str,
    problem: str,
    model: str,
    run_dir: str | Path,
    *,
    plans: int = 1,
    codes: int = 1,
    iterations: int = 1,
    beam_size: int = 1,
    sets: Iterable[str] = (),
) -> list[str]:
    """``autocomp-core optimize`` arguments for a quiet run that prints its summary as JSON:
    ``iterations`` of one beam of ``beam_size`` with ``plans`` x ``codes`` programs a parent,
    each ``--set KEY=VALUE`` of ``sets`` after them."""
    args = [
        "optimize",
        "--backend",
        backend,
        "--problem",
        problem,
        "--model",
        model,
        "--iterations",
        str(iterations),
        "--beam-size",
        str(beam_size),
        "--plans",
        str(plans),
        "--codes",
        str(codes),
        "--run-dir",
        str(run_dir),
        "--quiet",
        "--json",
    ]
    for assignment in sets:
        args += ["--set", assignment]
    return args
