"""Candidate workers started ahead of need.

Starting a worker costs more than most tiny evaluations: a sandbox, an interpreter and
``import torch`` (about 1.5 s on a small CPU). A ``Worker`` starts the sandboxed process
with ``candidate_main --wait``: it pays those costs, writes ``ready`` and waits for its
job file. The harness keeps one such worker in standby per device slot, so the next
candidate finds the imports done. Isolation is unchanged: each worker serves exactly one
candidate and ends with it (a crashed or hung candidate takes nothing else down).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from autocomp_core.sandbox import SandboxLimits, SandboxResult, remove_tree, run_sandboxed

#: A standby worker this close to its idle limit is not handed a job (it may be leaving).
IDLE_MARGIN_S = 30.0


class Worker:
    """One sandboxed candidate worker, started now, waiting for one job."""

    def __init__(self, env: dict[str, str], limits: SandboxLimits, idle_s: float) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="autocomp-cuda-eval-"))
        self.job_path = self.work / "job.json"
        self.idle_s = idle_s
        self.started = time.monotonic()
        self.dispatched = False
        self.loop = asyncio.get_running_loop()
        argv = [
            sys.executable,
            "-m",
            "autocomp_cuda.runtime.candidate_main",
            str(self.job_path),
            "--wait",
            f"{idle_s:g}",
        ]
        # The sandbox limit covers the idle wait and every phase after it; the harness
        # applies its own, tighter deadline from the moment it hands over the job.
        limits = dataclasses.replace(limits, wall_s=limits.wall_s + idle_s)
        self.task = asyncio.ensure_future(
            run_sandboxed(argv, limits=limits, cwd=self.work, env=env)
        )
        # A callback, not a finally: it runs even when the task is cancelled before it started
        # (an event loop that ends right after starting a standby worker).
        self.task.add_done_callback(self._remove_if_unused)

    def _remove_if_unused(self, _task: asyncio.Future) -> None:
        if not self.dispatched:  # never used: nothing in the work dir is wanted
            remove_tree(self.work)

    @property
    def ready(self) -> bool:
        return (self.work / "ready").exists()

    def usable(self) -> bool:
        """Still waiting, on this event loop, with time left before it gives up."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            return False
        age = time.monotonic() - self.started
        return (
            current is self.loop
            and not self.task.done()
            and not self.dispatched
            and age < self.idle_s - min(IDLE_MARGIN_S, self.idle_s / 2)
        )

    async def wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.ready and not self.task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.ready

    async def run(self, job: dict[str, Any], deadline_s: float) -> SandboxResult | None:
        """Hand over the job and wait for the worker to end; None if it overran ``deadline_s``
        (it is killed then: cancelling the sandboxed run kills its process group)."""
        self.dispatched = True
        tmp = self.work / "job.json.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, self.job_path)  # the worker polls for the final name: never half a file
        try:
            return await asyncio.wait_for(self.task, deadline_s)
        except TimeoutError:  # wait_for has cancelled the run, which killed the worker
            return None

    async def close(self) -> None:
        """Stop the worker (if running) and wait until its process is gone."""
        if not self.task.done():
            self.task.cancel()
        # Its own cancellation or failure is expected here and not ours to raise; a
        # cancellation of the caller still propagates.
        await asyncio.gather(self.task, return_exceptions=True)

    def discard(self) -> None:
        """Remove the work dir of a worker that was used (after the harness read its files)."""
        remove_tree(self.work)
