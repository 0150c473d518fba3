"""The gate the search awaits before each stage: the barrier order, pipelining, stopping."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from autocomp_core.engine.schedule import Gate, Stage, first_error
from autocomp_core.ledger.accounting import RunStopped


class Lines:
    """Plans that fork programs, each written, evaluated and (when it fails) repaired;
    every stage takes a number of scheduler turns and is logged as it starts and ends."""

    def __init__(self, gate: Gate, lead: int = 0) -> None:
        self.gate = gate
        self.lead = lead  # turns a program takes before it reaches its first gate
        self.log: list[tuple[str, Stage, str]] = []

    async def work(self, stage: Stage, turns: int, name: str) -> None:
        await self.gate.reach(stage)
        self.log.append(("start", stage, name))
        for _ in range(turns):
            await anyio.lowlevel.checkpoint()
        self.log.append(("end", stage, name))

    async def program(self, name: str, turns: int, fails: bool) -> None:
        for _ in range(self.lead):
            await anyio.lowlevel.checkpoint()
        await self.work(Stage.CODE, turns, name)
        await self.work(Stage.EVAL, turns, name)
        if fails:
            await self.work(Stage.REPAIR, turns, name)
            await self.work(Stage.REPAIR_EVAL, turns, name)

    async def plan(self, name: str, turns: int, programs: list[tuple[int, bool]]) -> None:
        await self.work(Stage.PLAN, turns, name)
        async with self.gate.fork() as work:
            for k, (program_turns, fails) in enumerate(programs):
                work.start_soon(self.program, f"{name}.{k}", program_turns, fails)

    def stages(self) -> list[Stage]:
        return [stage for _, stage, _ in self.log]


# one quick plan, one slow one; programs of unequal lengths, some failing
PLANS = [("a", 1, [(1, True), (6, False)]), ("b", 12, [(2, False), (1, True)])]


async def run(barrier: bool, plans=PLANS, lead: int = 0) -> Lines:
    gate = Gate(barrier)
    lines = Lines(gate, lead)
    async with gate.fork() as work:
        for name, turns, programs in plans:
            work.start_soon(lines.plan, name, turns, programs)
    return lines


@pytest.mark.asyncio
async def test_barrier_runs_stage_after_stage():
    lines = await run(barrier=True)
    assert lines.stages() == sorted(lines.stages())
    assert set(lines.stages()) == {
        Stage.PLAN,
        Stage.CODE,
        Stage.EVAL,
        Stage.REPAIR,
        Stage.REPAIR_EVAL,
    }
    assert len(lines.log) == 2 * (2 + 4 + 4 + 2 + 2)


@pytest.mark.asyncio
async def test_pipelined_starts_each_stage_as_soon_as_its_work_is_ready():
    lines = await run(barrier=False)
    assert len(lines.log) == 2 * (2 + 4 + 4 + 2 + 2)
    first_eval = lines.log.index(("start", Stage.EVAL, "a.0"))
    assert first_eval < lines.log.index(("end", Stage.PLAN, "b"))  # before the slow plan ends


@pytest.mark.asyncio
@pytest.mark.parametrize("lead", [0, 5])
async def test_a_line_counts_from_its_start_not_from_its_first_gate(lead):
    """The last plan starts its program and ends. The other plan's program, written by
    then, waits to be evaluated until that program is written too, however many turns it
    takes to reach its first gate."""
    lines = await run(True, [("a", 1, [(1, False)]), ("b", 12, [(1, False)])], lead)
    assert lines.stages() == sorted(lines.stages())
    assert lines.log.index(("end", Stage.CODE, "b.0")) < lines.log.index(
        ("start", Stage.EVAL, "a.0")
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("barrier", [True, False])
async def test_a_closed_door_lets_the_work_under_way_finish_and_starts_nothing(barrier):
    gate = Gate(barrier)
    lines = Lines(gate)

    async def refused() -> None:
        await gate.reach(Stage.PLAN)
        await anyio.lowlevel.checkpoint()  # while the plan of "a" is under way
        raise RunStopped("budget.usd", "spent")

    async with gate.fork() as work:
        work.start_soon(refused)
        work.start_soon(lines.plan, "a", 4, [(1, False)])
    assert gate.stop is not None and (gate.stop.reason, gate.stop.detail) == ("budget.usd", "spent")
    assert lines.log == [("start", Stage.PLAN, "a"), ("end", Stage.PLAN, "a")]
    async with gate.fork() as work:  # nothing passes the gate any more
        work.start_soon(lines.program, "later", 1, False)
    assert len(lines.log) == 2


@pytest.mark.asyncio
async def test_a_failed_line_raises_its_own_error():
    gate = Gate(barrier=True)

    async def broken() -> None:
        await gate.reach(Stage.CODE)
        raise ValueError("the program writer broke")

    async def parent() -> None:
        async with gate.fork() as work:
            work.start_soon(broken)

    with pytest.raises(BaseExceptionGroup) as caught:
        async with gate.fork() as work:
            work.start_soon(parent)
    error = first_error(caught.value)
    assert isinstance(error, ValueError) and str(error) == "the program writer broke"
