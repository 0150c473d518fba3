"""The build's journal: a run store in ``DIR/.build`` holding every LLM call, every
evaluation and each stage's output, with the run's budgets in front of the LLM.

A stage's output is kept under a key made of the stage, its generation and everything it
was computed from; a later build reuses it while that key holds. ``--rerun STAGE`` bumps
the stage's generation: its requests then carry new sample indexes, so they are really
asked again instead of read back, and every stage after it sees new inputs.
"""

from __future__ import annotations

import hashlib
import json
import sys
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from ..config import BudgetConfig
from ..engine.journal import Completer, JournaledLLM
from ..ledger.accounting import Budget, BudgetReached, Ledger
from ..ledger.store import RunStore
from ..llm.types import LLMRequest, LLMResponse, Prompt

T = TypeVar("T")

#: bumped when a stage's output format changes, so old journals are recomputed
FORMAT = 1


class BuildJournal:
    def __init__(
        self,
        build_dir: Path,
        client: Completer | None,
        budget: BudgetConfig,
        model: str,
        max_tokens: int | None = None,
        quiet: bool = False,
    ) -> None:
        self.store = RunStore(build_dir)
        self.ledger = Ledger.from_store(self.store)
        self.budget = Budget(budget, self.ledger)
        self.llm = JournaledLLM(client, self.store, self.ledger, self.budget)
        self.model = model
        self.max_tokens = max_tokens
        self.quiet = quiet
        self.in_flight = 0

    def close(self) -> None:
        self.store.close()

    # -- stages -------------------------------------------------------------------------
    def generation(self, stage: str) -> int:
        return int(self.store.get_meta(f"generation/{stage}", 0))

    def rerun(self, stage: str) -> None:
        self.store.set_meta(f"generation/{stage}", self.generation(stage) + 1)
        self.store.event("rerun", stage=stage, generation=self.generation(stage))

    def key(self, stage: str, inputs: Any) -> str:
        blob = json.dumps(
            [FORMAT, stage, self.generation(stage), self.model, inputs], sort_keys=True, default=str
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def cached(self, stage: str, key: str) -> Any | None:
        record = self.store.get_meta(f"stage/{stage}")
        return record["output"] if record and record["key"] == key else None

    def save(self, stage: str, key: str, output: Any) -> Any:
        self.store.set_meta(f"stage/{stage}", {"key": key, "output": output})
        self.store.event("stage_done", stage=stage)
        return output

    # -- LLM ----------------------------------------------------------------------------
    async def ask(self, stage: str, item: str, prompt: Prompt) -> LLMResponse:
        """One journaled request of a stage about one item (a section, a batch, a round).
        Deterministic: temperature 0, sample index from the item and the stage's generation."""
        sample = zlib.crc32(f"{stage}|{self.generation(stage)}|{item}".encode())
        request = LLMRequest(
            model=self.model,
            prompt=prompt,
            phase=f"pack_{stage}",
            sample=sample,
            temperature=0.0,
            max_tokens=self.max_tokens,
        )
        limit = self.budget.config.llm_calls
        if limit is None or self.store.llm_response(request.key()) is not None:
            return await self.llm.complete(request)
        # calls in flight count against the call budget, so concurrency cannot overshoot it
        if self.ledger.llm_calls + self.in_flight >= limit:
            raise BudgetReached("budget.llm_calls")
        self.in_flight += 1
        try:
            return await self.llm.complete(request)
        finally:
            self.in_flight -= 1

    # -- progress -----------------------------------------------------------------------
    def say(self, text: str) -> None:
        if self.quiet:
            return
        led = self.ledger
        print(
            f"[build-pack] {text}  ({led.llm_calls} LLM calls, {led.tokens} tokens, "
            f"${led.cost_usd:.4f})",
            file=sys.stderr,
            flush=True,
        )


async def gather(calls: list[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the calls at once (the LLM client bounds how many are in flight) and return
    their results in order. A budget reached stops new calls but lets those in flight
    finish, so their answers reach the journal; any other failure ends them all."""
    results: list[Any] = [None] * len(calls)
    stopped: list[BudgetReached] = []

    async def run(k: int) -> None:
        try:
            results[k] = await calls[k]()
        except BudgetReached as exc:
            stopped.append(exc)

    try:
        async with anyio.create_task_group() as tg:
            for k in range(len(calls)):
                tg.start_soon(run, k)
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None
    if stopped:
        raise stopped[0]
    return results
