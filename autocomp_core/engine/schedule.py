"""The schedule of an iteration's work: a gate the search awaits before each stage.

The search's work runs in *lines*: a plan, then the programs that implement it, each
evaluated, then repaired or scored. Before each stage a line awaits ``Gate.reach``.

Pipelined, every stage is open: a plan starts its programs the moment it arrives, a
program is evaluated the moment it is written. Barrier (the original's schedule), a stage
opens only when no line is still at an earlier one: all plans, then all programs, their
evaluations, the repairs, the repairs' evaluations and the scores.

A line that meets a closed door (``RunStopped``) ends quietly and stops the gate: no line
passes it again, and the work under way finishes.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from ..ledger.accounting import RunStopped


class Stage(enum.IntEnum):
    """The order in which the barrier schedule opens stages; the pipelined one ignores it."""

    PLAN = 0
    CODE = 1
    EVAL = 2
    REPAIR = 3
    REPAIR_EVAL = 4
    SCORE = 5


@dataclass
class _Line:
    stage: Stage | None  # the stage it is in or waits for; None once it has ended


_current: ContextVar[_Line | None] = ContextVar("autocomp_line", default=None)


class Gate:
    """One iteration's schedule (see the module's docstring)."""

    def __init__(self, barrier: bool) -> None:
        self.barrier = barrier
        self.stop: RunStopped | None = None  # the first closed door a line met
        self._lines: Counter[Stage] = Counter()  # lines under way, by stage
        self._open = {stage: anyio.Event() for stage in Stage}

    async def reach(self, stage: Stage) -> None:
        """Wait until ``stage`` is open to the current line (``RunStopped`` once stopped)."""
        line = _current.get()
        assert line is not None and line.stage is not None, "reach() outside a line of work"
        if self.stop is None and stage != line.stage:
            self._move(line, stage)
        if self.barrier and self.stop is None:
            await self._open[stage].wait()
        if self.stop is not None:
            raise RunStopped(self.stop.reason, self.stop.detail)

    @asynccontextmanager
    async def fork(self) -> AsyncIterator[Fork]:
        """Start new lines of work, and wait for them; the current line (if any) ends in
        them. A new line counts at the current line's stage from the moment it is started,
        not from its first step, so no later stage opens while it is still to run."""
        parent = _current.get()
        stage = parent.stage if parent is not None and parent.stage is not None else Stage.PLAN
        async with anyio.create_task_group() as group:
            yield Fork(self, group, stage)
            if parent is not None:
                self._move(parent, None)

    def _start(self, group: anyio.abc.TaskGroup, stage: Stage, work: Work, args: tuple) -> None:
        line = _Line(None)
        self._move(line, stage)
        group.start_soon(self._run, line, work, args)

    async def _run(self, line: _Line, work: Work, args: tuple) -> None:
        _current.set(line)  # this task's own context: its line
        try:
            await work(*args)
        except RunStopped as stop:
            if self.stop is None:
                self.stop = stop
                for event in self._open.values():  # wake every waiting line: it ends
                    event.set()
        finally:
            self._move(line, None)

    def _move(self, line: _Line, stage: Stage | None) -> None:
        if line.stage is not None:
            self._lines[line.stage] -= 1
        line.stage = stage
        if stage is not None:
            self._lines[stage] += 1
        # lines only move forward, so a stage, once open, stays open
        lowest = min((s for s, n in self._lines.items() if n > 0), default=None)
        for s in Stage:
            if lowest is not None and s > lowest:
                break
            self._open[s].set()


Work = Callable[..., Awaitable[None]]


@dataclass
class Fork:
    """Starts lines of work inside ``Gate.fork``."""

    gate: Gate
    group: anyio.abc.TaskGroup
    stage: Stage

    def start_soon(self, work: Work, *args: Any) -> None:
        self.gate._start(self.group, self.stage, work, args)


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The error a failed line raised, out of the (nested) groups its task groups made."""
    cancelled = anyio.get_cancelled_exc_class()
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            exc = first_error(exc)
        if not isinstance(exc, cancelled):
            return exc
    return group.exceptions[0]
