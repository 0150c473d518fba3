"""The lock-step protocol between the engine and the two timing workers (the baseline's and
the candidate's), file by file in each worker's work dir.

A worker that has finished its warm-up writes ``timing-ready``. For timed call r the engine
writes ``call-<r>.json`` (atomically: a temporary name, then a rename) holding that call's
seed, and the worker, which polls for it, times its call r on those inputs and then writes
``done-<r>``. The engine hands call r to one worker, waits for its ``done-<r>``, then hands
it to the other: the two workers' calls alternate, so machine load lands on both alike,
and no worker learns a seed before its call is due.

Nothing here is trusted by the engine beyond the timing it drives: a candidate that writes
these files itself changes only when its own calls start, and the engine checks each timed
call's reported duration against the time it saw pass between ``call-<r>.json`` and
``done-<r>`` (``autocomp_cuda.lockstep``). Standard library only: the engine imports it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

READY = "timing-ready"
#: How often a waiting worker looks for its next call: short next to any timed call's
#: set-up (drawing its inputs), and about 20 us of CPU a look.
POLL_S = 0.001


def call_path(work: Path, r: int) -> Path:
    return work / f"call-{r}.json"


def done_path(work: Path, r: int) -> Path:
    return work / f"done-{r}"


# --------------------------------------------------------------------------- worker side


def announce_ready(work: Path) -> None:
    """Warm-up done: the engine may start handing over timed calls."""
    (work / READY).write_text("")


def await_call(work: Path, r: int, sleep: Callable[[float], None]) -> int:
    """Wait for call r's seed (the phase's watchdog ends a worker the engine never calls)."""
    path = call_path(work, r)
    while not path.exists():
        sleep(POLL_S)
    seed = int(json.loads(path.read_text())["seed"])
    path.unlink(missing_ok=True)
    return seed


def report_done(work: Path, r: int) -> None:
    done_path(work, r).write_text("")


# --------------------------------------------------------------------------- engine side


def hand_over(work: Path, r: int, seed: int) -> None:
    """Call r is due in the worker at ``work``: its seed, never half a file."""
    tmp = work / f"call-{r}.json.tmp"
    tmp.write_text(json.dumps({"seed": seed}))
    os.replace(tmp, call_path(work, r))
