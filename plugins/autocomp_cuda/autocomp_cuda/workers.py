"""Candidate workers started ahead of need, and reference workers kept for many problems.

Starting a worker costs more than most tiny evaluations: a sandbox, an interpreter and
``import torch`` (about 1.5 s on a small CPU). A ``Worker`` starts the sandboxed process
with ``candidate_main --wait``: it pays those costs, writes ``ready`` and waits for its
job file. The harness keeps one such worker in standby per device slot, so the next
candidate finds the imports done. Isolation is unchanged: each worker serves exactly one
candidate and ends with it (a crashed or hung candidate takes nothing else down).

With a ``PreloadServer`` (the harness's default) a worker, and a reference server too, is
forked from a process that imported torch once (``autocomp_core.sandbox.preload``), in the
same sandbox: the import is paid once per device slot instead of once per process.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autocomp_core import (
    HeldDir,
    PreloadServer,
    SandboxLimits,
    SandboxResult,
    remove_tree,
    run_sandboxed,
)

CANDIDATE_MAIN = "autocomp_cuda.runtime.candidate_main"
REFERENCE_MAIN = "autocomp_cuda.runtime.reference_main"
#: A standby worker this close to its idle limit is not handed a job (it may be leaving).
IDLE_MARGIN_S = 30.0
#: A reference server that has not finished its imports by then is killed.
STARTUP_S = 300.0


def _waiting(loop, task: asyncio.Future, since: float, idle_s: float) -> bool:
    """A process waiting for work since ``since``: on the running event loop, alive, and not
    about to leave on its own (``idle_s``)."""
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:
        return False
    idle = time.monotonic() - since
    return current is loop and not task.done() and idle < idle_s - min(IDLE_MARGIN_S, idle_s / 2)


class _Sandboxed(abc.ABC):
    """A sandboxed worker process, started now, in a work dir of its own that is held while
    the process lives (a killed engine's is swept). Each kind says its work dir's prefix, its
    state, its command line and its sandbox's limits, and what is left once it ends."""

    prefix = "autocomp-cuda-"

    def __init__(
        self,
        env: dict[str, str],
        limits: SandboxLimits,
        idle_s: float,
        hidden: Sequence[Path] = (),
        preload: PreloadServer | None = None,
    ) -> None:
        self.held = HeldDir(self.prefix)
        self.work = self.held.path
        self.idle_s = idle_s
        self.loop = asyncio.get_running_loop()
        self._prepare()
        self.task = asyncio.ensure_future(
            run_sandboxed(
                self._argv(),
                limits=self._life_limits(limits),
                cwd=self.work,
                env=env,
                hidden=hidden,
                preload=preload,
            )
        )
        # A callback, not a finally: it runs even when the task is cancelled before it started
        # (an event loop that ends right after starting a standby worker).
        self.task.add_done_callback(self._ended)

    def failure(self) -> str:
        """Why its sandbox failed to run it ("" where it ran, or still runs): an isolation
        level that cannot be had here, say, in the sandbox's own one-line words."""
        if self.task.done() and not self.task.cancelled() and self.task.exception() is not None:
            return str(self.task.exception())
        return ""

    def disk_exceeded(self) -> str:
        """Why its sandbox killed it for what its work dir held ("" where it did not)."""
        if self.task.done() and not self.task.cancelled() and self.task.exception() is None:
            return self.task.result().disk_exceeded
        return ""

    @abc.abstractmethod
    def _prepare(self) -> None:
        """This kind's state, set before the process starts."""

    @abc.abstractmethod
    def _argv(self) -> list[str]:
        """The process's command line."""

    @abc.abstractmethod
    def _life_limits(self, limits: SandboxLimits) -> SandboxLimits:
        """Its sandbox's limits, from the evaluation's."""

    @abc.abstractmethod
    def _ended(self, _task: asyncio.Future) -> None:
        """What is left once the process ends."""

    async def close(self) -> None:
        """Stop the process (if running) and wait until it is gone."""
        if not self.task.done():
            self.task.cancel()
        # Its own cancellation or failure is expected here and not ours to raise; a
        # cancellation of the caller still propagates.
        await asyncio.gather(self.task, return_exceptions=True)


class Worker(_Sandboxed):
    """One sandboxed candidate worker, started now, waiting for one job."""

    prefix = "autocomp-cuda-eval-"

    def _prepare(self) -> None:
        self.job_path = self.work / "job.json"
        self.started = time.monotonic()
        self.dispatched = False

    def _argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            CANDIDATE_MAIN,
            str(self.job_path),
            "--wait",
            f"{self.idle_s:g}",
        ]

    def _life_limits(self, limits: SandboxLimits) -> SandboxLimits:
        # The sandbox limit covers the idle wait and every phase after it; the harness
        # applies its own, tighter deadline from the moment it hands over the job.
        return dataclasses.replace(limits, wall_s=limits.wall_s + self.idle_s)

    def _ended(self, _task: asyncio.Future) -> None:
        if not self.dispatched:  # never used: nothing in the work dir is wanted
            self.held.release()

    @property
    def ready(self) -> bool:
        return (self.work / "ready").exists()

    def usable(self) -> bool:
        """Still waiting, on this event loop, with time left before it gives up."""
        return not self.dispatched and _waiting(self.loop, self.task, self.started, self.idle_s)

    async def wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.ready and not self.task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.ready

    async def run(self, job: dict[str, Any], deadline_s: float) -> SandboxResult | None:
        """Hand over the job and wait for the worker to end; None if it overran ``deadline_s``
        (it is killed then: cancelling the sandboxed run kills its process group)."""
        self.hand_over(job)
        return await self.wait(deadline_s)

    def hand_over(self, job: dict[str, Any]) -> None:
        """Give the worker its job and return at once (``wait`` for its end)."""
        self.dispatched = True
        tmp = self.work / "job.json.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, self.job_path)  # the worker polls for the final name: never half a file

    async def wait(self, deadline_s: float) -> SandboxResult | None:
        """Wait for the worker to end; None if it overran ``deadline_s`` (it is killed then:
        cancelling the sandboxed run kills its process group)."""
        try:
            return await asyncio.wait_for(self.task, max(deadline_s, 0.0))
        except TimeoutError:  # wait_for has cancelled the run, which killed the worker
            return None

    def discard(self) -> None:
        """Remove the work dir of a worker that was used (after the harness read its files)."""
        self.held.release()


class ReferenceServer(_Sandboxed):
    """One sandboxed reference worker (``reference_main --serve``) kept for many problems.

    The gate over a whole suite runs one reference job per problem; a cold worker spends
    most of a small problem's time importing torch. A server pays that once and serves
    ``MAX_JOBS`` problems one after another, each with a fresh module and the process-wide
    settings put back (see ``reference_main.serve``). A job that overruns its deadline kills
    the server, and one that crashes ends it: the next job gets a fresh one, and no other
    job's result depends on it.
    """

    #: Problems one server computes before it is replaced (bounds what any could leave behind).
    MAX_JOBS = 64
    prefix = "autocomp-cuda-refs-"

    def _prepare(self) -> None:
        self.served = 0
        self.busy = False  # a job's files are in the work dir, not yet read by the harness
        self.last_used = time.monotonic()

    def _argv(self) -> list[str]:
        return [sys.executable, "-m", REFERENCE_MAIN, "--serve", f"{self.idle_s:g}"]

    def _life_limits(self, limits: SandboxLimits) -> SandboxLimits:
        # The sandbox's limit covers the server's whole life; each job has its own deadline.
        life_s = (limits.wall_s + self.idle_s) * self.MAX_JOBS
        return dataclasses.replace(limits, wall_s=life_s, cpu_s=math.ceil(life_s))

    def _ended(self, _task: asyncio.Future) -> None:
        if not self.busy:  # (with a job in flight, ``finish`` removes it once it is read)
            self.held.release()

    def usable(self) -> bool:
        """Alive on this event loop, with jobs and idle time left."""
        return self.served < self.MAX_JOBS and _waiting(
            self.loop, self.task, self.last_used, self.idle_s
        )

    def job_paths(self) -> tuple[Path, Path]:
        """Where the next job's problem file goes, and where its outputs will be."""
        n = self.served + 1
        return self.work / f"problem-{n}.py", self.work / f"out-{n}"

    async def run(self, job: dict[str, Any], deadline_s: float) -> tuple[str, str]:
        """Hand over the next job and wait for it: ("done" | "timeout" | "crashed: ...", its
        stderr). After a timeout or a crash the server is gone (``close`` was called)."""
        self.served += 1
        self.busy = True
        n = self.served
        tmp = self.work / f"job-{n}.json.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, self.work / f"job-{n}.json")
        # The deadline counts from when the server has its imports done (a cold one under
        # load takes a while; that is not the problem's time).
        started = time.monotonic()
        while not (self.work / "ready").exists() and not self.task.done():
            if time.monotonic() - started > STARTUP_S:
                break
            await asyncio.sleep(0.01)
        deadline = time.monotonic() + deadline_s
        done = self.work / f"done-{n}"
        while not done.exists() and not self.task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        how = "done" if done.exists() else "crashed" if self.task.done() else "timeout"
        if how != "done":
            await self.close()
        try:
            stderr = (self.work / f"stderr-{n}").read_text(errors="replace")
        except OSError:
            stderr = ""
        if how == "crashed" and (failed := self.failure()):
            how = f"crashed: {failed}"  # (it could not start: a sandbox that cannot be made)
        elif how == "crashed" and not self.task.cancelled():
            ended = self.task.result()
            how = f"crashed: {f'signal {ended.signal}' if ended.signal else f'exit code {ended.returncode}'}"
            if ended.disk_exceeded:
                how = f"crashed: killed, {ended.disk_exceeded}"
            stderr += ended.stderr  # what it said outside any job
        self.last_used = time.monotonic()
        return how, stderr[-2000:]

    def finish(self) -> None:
        """The harness has read (and moved away) the last job's outputs: drop its files, or
        the whole work dir of a server that has ended."""
        self.busy = False
        if self.task.done():
            self.held.release()
            return
        n = self.served
        for name in (f"job-{n}.json", f"problem-{n}.py", f"stderr-{n}", f"done-{n}"):
            (self.work / name).unlink(missing_ok=True)
        if (self.work / f"out-{n}").exists():
            remove_tree(self.work / f"out-{n}")
