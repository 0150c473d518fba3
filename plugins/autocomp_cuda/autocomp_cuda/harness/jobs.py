"""What a candidate worker is asked to do (``runtime/candidate_main.py`` reads it), and the
files it gets beside the job: the problem and the reference's initial weights, never the
reference's outputs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..problemset import ProblemSpec
from .reference import trial_seeds
from .settings import Settings


def candidate_job(
    settings: Settings,
    work: Path,
    mode: str,
    spec: ProblemSpec | None,
    seed: int | None,
    trials: int,
    ref_meta: dict[str, Any] | None = None,
    timed: bool = True,
) -> dict[str, Any]:
    """A worker's job in ``mode`` (build, eval, baseline or compile); ``ref_meta``: the
    reference it is judged against (the sizes it ran at, the buffers its forward updates)."""
    s = settings
    job: dict[str, Any] = {
        "mode": mode,
        "work_dir": str(work),
        "candidate": str(work / "candidate.py"),
        "device": "cuda" if s.device == "cuda" else "cpu",
        "settle_s": s.settle_s,
        "build_dir": str(work / "ext"),
        "phase_timeouts": s.phase_timeouts(),
    }
    if mode == "build":
        job["phase_timeouts"] = {"setup": s.compile_timeout_s, "load": s.compile_timeout_s}
    if spec is not None:
        job.update(_problem_part(s, work, spec, seed, trials, ref_meta or {}, timed))
    return job


def _problem_part(
    s: Settings,
    work: Path,
    spec: ProblemSpec,
    seed: int | None,
    trials: int,
    ref: dict[str, Any],
    timed: bool,
) -> dict[str, Any]:
    return dict(
        problem={
            "path": str(work / "problem.py"),
            "id": spec.id,
            "overrides": spec.sizes(s.size) if ref.get("sizes") is None else ref["sizes"],
        },
        init_seed=seed,
        trial_seeds=trial_seeds(seed or 0, trials),
        trials=trials,
        in_place=spec.in_place,
        # A candidate may update buffers only where the reference's own forward does
        # (training-mode BatchNorm's running statistics); parameters never.
        buffers_mutate=spec.buffers_mutate or bool(ref.get("mutated_buffers")),
        mutated_buffers=ref.get("mutated_buffers") or [],
        # the variant each trial's inputs were drawn from, as the reference ran them,
        # and those a timed call may draw from (input_plan)
        input_variants=ref.get("input_variants"),
        timed_variants=ref.get("timed_variants"),
        timing={
            "warmup": s.warmup,
            "reps": s.reps,
            "compile_baseline": s.compile_baseline,
        }
        if s.reps > 0 and timed
        else None,
    )


def give_problem(work: Path, spec: ProblemSpec, ref_dir: Path) -> None:
    """The problem's source and the reference's initial weights, into a worker's dir."""
    (work / "problem.py").write_text(spec.source)
    shutil.copy2(ref_dir / "init.pt", work / "init.pt")


def baseline_job(
    settings: Settings,
    work: Path,
    spec: ProblemSpec,
    seed: int,
    ref_dir: Path,
    ref_meta: dict[str, Any],
) -> dict[str, Any]:
    """The job of the worker that times the eager baseline (and the compiled one, when
    that baseline is on) and never holds a candidate, so no candidate can slow what it is
    compared with. It leaves the eager output of every timed call in ``timed_refs/``."""
    s = settings
    give_problem(work, spec, ref_dir)
    job = candidate_job(s, work, "baseline", spec, seed, s.trials, ref_meta)
    # It waits, warmed up, while the candidate loads and passes its trials, then its calls
    # alternate with the candidate's.
    job["phase_timeouts"]["timing"] = (
        s.load_timeout_s + s.correctness_timeout_s + 2 * s.timing_timeout_s
    )
    return job
