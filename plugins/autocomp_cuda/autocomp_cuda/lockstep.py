"""Driving the baseline's and the candidate's timing workers in lock-step (the engine's side
of ``runtime/lockstep.py``).

Both workers are alive through the timing phase, each in its own sandboxed process (no
candidate can touch the baseline it is compared with). For every timed call the engine draws
nothing new (the seeds are its own, drawn from OS randomness), hands call r to one worker,
waits for it to finish, then hands call r to the other; which one goes first alternates from
call to call, so an order effect (a warm cache, a CPU that has just clocked up) cancels out.
Machine load that comes and goes now slows the baseline's and the candidate's calls alike,
as it did when both were timed in one process.

A worker that ends (a crash, its own watchdog) or overruns the deadline stops the drive;
what the engine does with each worker then is the caller's decision.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from .runtime import lockstep
from .workers import Worker

#: How often the engine looks for a worker's files (the workers poll at the same rate).
POLL_S = lockstep.POLL_S


@dataclass
class Drive:
    """How a lock-step drive ended: ``complete``, or the name of the worker that ``ended``
    (its process exited) or ``overran`` the deadline, and the calls done by then."""

    outcome: str
    worker: str | None = None
    calls_done: int = 0
    #: per worker, the engine's clock from handing over call r to seeing it done (ms)
    seen_ms: dict[str, list[float]] = field(default_factory=dict)


async def _wait_for(path: Path, worker: Worker, deadline: float) -> str:
    """ "seen" once ``path`` exists, "ended" if the worker's process is gone first, else
    "overran" at the deadline."""
    while not path.exists():
        if worker.task.done():
            # (its last file may have landed just before it exited)
            return "seen" if path.exists() else "ended"
        if time.monotonic() > deadline:
            return "overran"
        await asyncio.sleep(POLL_S)
    return "seen"


async def drive(workers: dict[str, Worker], seeds: list[int], deadline: float) -> Drive:
    """Run the timed calls of ``workers`` (name -> a worker whose timing job was handed over)
    in lock-step on ``seeds``, by ``deadline`` (``time.monotonic``)."""
    names = list(workers)
    result = Drive("complete", seen_ms={name: [] for name in names})
    for name in names:  # every worker done with its warm-up before the first timed call
        how = await _wait_for(workers[name].work / lockstep.READY, workers[name], deadline)
        if how != "seen":
            result.outcome, result.worker = how, name
            return result
    for r, seed in enumerate(seeds):
        for name in names:
            worker = workers[name]
            handed = time.monotonic()  # read before the file exists: the call starts after
            lockstep.hand_over(worker.work, r, seed)
            how = await _wait_for(lockstep.done_path(worker.work, r), worker, deadline)
            if how != "seen":
                result.outcome, result.worker = how, name
                return result
            result.seen_ms[name].append((time.monotonic() - handed) * 1e3)
        result.calls_done = r + 1
    return result


def overstated_calls(reported_ms: list[float], seen_ms: list[float]) -> list[int]:
    """The calls a worker says took longer than the engine saw pass between handing them over
    and their ``done`` file: it signalled a call done before it was (so the other worker's
    next call ran beside it). An honest worker's timed call lies inside that interval."""
    return [r for r, (took, seen) in enumerate(zip(reported_ms, seen_ms)) if took > seen]
