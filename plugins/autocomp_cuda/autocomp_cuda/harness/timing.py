"""Timing a candidate beside the baselines: two workers driven in lock-step (``lockstep``),
call r of each on the same inputs, whose seeds are drawn now."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from autocomp_core import SandboxResult

from .. import kernel_evidence, lockstep, proc_clock
from ..workers import Worker
from .files import clock_socket, read_json, take_ownership
from .settings import Settings
from .verdicts import Verdict

#: How long a candidate's worker that stopped the drive may take to end on its own (its
#: sandbox killed it, and is reporting why) before it is closed.
KILLED_GRACE_S = 2.0

#: What ``time_in_lockstep`` returns: the candidate worker's end (None: killed at the
#: deadline), the baseline worker's result, the drive, and a verdict where evaluation ends.
Timed = tuple[SandboxResult | None, dict[str, Any], lockstep.Drive | None, Verdict | None]


def timed_seeds(reps: int) -> list[int]:
    """The timed calls' input seeds: drawn from OS randomness for each evaluation, so neither
    the candidate (from the evaluation seed or ``torch.initial_seed()``) nor any cache kept by
    an earlier evaluation can know them in advance."""
    return [secrets.randbits(31) for _ in range(reps)]


async def time_in_lockstep(
    settings: Settings,
    worker: Worker,
    job: dict[str, Any],
    baseline_worker: Worker,
    baseline_job: dict[str, Any],
    seeds: list[int],
    output: dict[str, Any],
) -> Timed:
    """Hand both jobs over and drive the timed calls in lock-step. Returns the candidate
    worker's end (None: killed at the deadline), the baseline worker's result, the drive
    (the engine's own clock of every timed call, and the digests of their outputs), and a
    verdict where the evaluation ends here (a protocol broken by the candidate, or a
    baseline that could not be timed: not the candidate's fault). ``output``: the problem's
    output (its ``shape`` and ``dtype``), which every timed call must return."""
    workers = {"baseline": baseline_worker, "candidate": worker}
    ends = {name: clock_socket(w.work) for name, w in workers.items()}
    contenders = {
        "baseline": ["base"] + ["compiled"] * bool(baseline_job["timing"]["compile_baseline"]),
        "candidate": ["cand"],
    }
    # (recorded before the candidate runs: the builds it may later replace are not these)
    builds = kernel_evidence.placed_builds(worker.work)
    try:
        baseline_worker.hand_over(baseline_job)
        worker.hand_over(job)
        deadline = time.monotonic() + settings.eval_deadline_s()
        cpu_clock = settings.device == "cpu" and proc_clock.available()
        moved = None
        if settings.device == "cpu":  # the engine moves inputs and outputs itself
            keep = baseline_worker.work / "read_by_the_engine"  # (no candidate sees it)
            keep.mkdir()
            moved = lockstep.Moved(
                keep,
                tuple(output["shape"]),
                f"torch.{output['dtype']}",
                in_place=bool(baseline_job.get("in_place")),
                builds=builds,
            )
        drive = await lockstep.drive(workers, contenders, ends, seeds, deadline, cpu_clock, moved)
    finally:
        for end in ends.values():
            end.close()
    if drive.worker == "candidate" and drive.outcome in ("garbled", "unreadable", "ended"):
        # (its sandbox may have killed it: then that is why it stopped, once its run has ended)
        if not proc_clock.running(ends["candidate"].pid):
            await asyncio.wait({worker.task}, timeout=KILLED_GRACE_S)
        killed = worker.disk_exceeded()  # ("" while it runs: its own failure, judged below)
        if killed:
            await worker.close()
            await baseline_worker.close()
            return None, {}, None, Verdict("runtime_error", f"the worker was killed: {killed}")
    if drive.outcome == "wrong_output" and drive.worker == "candidate":
        await worker.close()
        await baseline_worker.close()
        return None, {}, None, Verdict("mismatch", drive.detail)
    if drive.outcome in ("garbled", "unreadable") and drive.worker == "candidate":
        await worker.close()
        await baseline_worker.close()
        broken = f"the candidate's worker broke the timing protocol: {drive.detail}"
        return None, {}, None, Verdict("hack_suspected", broken)
    if drive.outcome == "complete":
        baseline_end = await baseline_worker.wait(deadline - time.monotonic())
        result = await worker.wait(deadline - time.monotonic())
    elif drive.worker == "candidate":  # it failed (a status of its own) or hung
        await baseline_worker.close()
        return await _candidate_stopped(worker, drive, len(seeds), deadline)
    else:  # the baseline's worker failed, or hung
        await worker.close()
        await baseline_worker.close()
        baseline_end = None
    outcome = read_json(baseline_worker.work / "result.json")
    take_ownership(baseline_worker.work)
    if baseline_end is None or outcome is None or outcome.get("status") != "ok":
        why = (
            (outcome or {}).get("message")
            or baseline_worker.failure()
            or drive.detail
            or (
                "it overran its deadline"
                if baseline_end is None
                else (baseline_end.stderr or "")[-2000:]
            )
        )
        return None, {}, None, Verdict("infra_error", f"timing the baseline failed: {why}")
    return result, outcome, drive, None


async def _candidate_stopped(
    worker: Worker, drive: lockstep.Drive, timed_calls: int, deadline: float
) -> Timed:
    """The candidate's worker stopped before its timed calls were done."""
    if drive.outcome == "overran":
        await worker.close()
        return None, {}, None, None
    result = await worker.wait(deadline - time.monotonic())
    ended = read_json(worker.work / "result.json") or {}
    if ended.get("status") == "ok":  # yet not all its timed calls done
        short = f"the worker ended after {drive.calls_done} of {timed_calls} timed calls"
        return result, {}, None, Verdict("runtime_error", short)
    return result, {}, None, None
