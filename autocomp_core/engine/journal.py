"""The two doors through which the search spends: LLM calls and evaluations.

Both consult the run store first, so a resumed run repeats no answered call and no
finished evaluation, and both check the budgets before spending. Every response is
journaled, failures included, so a replay meets each call as it went.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import Counter
from typing import Any, Protocol

import anyio

from ..contract.backend import Backend, EvalContext, EvalResult, FailureKind, Problem
from ..errors import RunError
from ..executors import EvalRequest, Executor
from ..executors.local import LocalExecutor
from ..ledger.accounting import Budget, Ledger, RunStopped
from ..ledger.store import ATTEMPT_LOST, INFRA_ERROR, RunStore
from ..llm.types import ErrorKind, LLMError, LLMRequest, LLMResponse

#: how a run that ran to its end stops; any other stop reason ends a replay of it where the
#: recorded answers run out
FINISHED = ("completed", "early_stop")


class Completer(Protocol):
    async def complete(self, request: LLMRequest) -> LLMResponse: ...


class ReplayMiss(RunError):
    """Replay met a request the recorded run, which ran to its end, never made."""


def recorded_stop(store: RunStore) -> str | None:
    """Why a recorded run stopped before its end (a budget, an interruption), or None if it
    ran to its end."""
    reason = store.get_meta("stop_reason") or "interrupted"
    return None if reason in FINISHED else reason


def billed(resp: LLMResponse) -> bool:
    """The provider answered, and charged: an answer, or a failure that still cost tokens
    (a truncated or empty completion). Such a response is never asked for again."""
    if resp.ok or resp.usage.total > 0 or resp.cost_usd > 0:
        return True
    return resp.error is not None and resp.error.kind in (ErrorKind.TRUNCATED, ErrorKind.EMPTY)


def request_record(req: LLMRequest) -> dict[str, Any]:
    return {
        "model": req.model,
        "phase": req.phase,
        "sample": req.sample,
        "temperature": req.temperature,
        "max_tokens": req.max_tokens,
        "reasoning_effort": req.reasoning_effort,
        "response_format": req.response_format.value,
        "system": req.prompt.system,
        "static": req.prompt.static,
        "dynamic": req.prompt.dynamic,
        "context": req.prompt.context,
    }


class JournaledLLM:
    """Answers from the journal when it can; otherwise asks the LLM and records the answer.

    A recorded answer is used again, and so is a recorded failure the provider billed; a
    failure that cost nothing (a refused connection, a 5xx) is asked again on resume. At
    most ``max_in_flight`` calls go out at once, and the budgets are checked as each one
    goes out, so calls queued behind the limit never pass a budget that is reached while
    they wait.

    In replay mode (``client`` is None) every answer, and every failure, comes from
    ``replay_source``; where its answers run out, a replay of a run that stopped early
    stops with the same reason (``RunStopped``), and one of a finished run raises
    ``ReplayMiss``.
    """

    def __init__(
        self,
        client: Completer | None,
        store: RunStore,
        ledger: Ledger,
        budget: Budget,
        replay_source: RunStore | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.ledger = ledger
        self.budget = budget
        self.replay_source = replay_source
        self.replay_stop = recorded_stop(replay_source) if replay_source is not None else None
        self._gate = anyio.CapacityLimiter(max_in_flight) if max_in_flight else None
        self._in_flight: dict[str, anyio.Event] = {}
        self.asking: Counter[str] = Counter()  # requests sent to the LLM and not answered, by phase

    async def complete(self, req: LLMRequest) -> LLMResponse:
        key = req.key()
        while key in self._in_flight:  # the same request is already being asked
            await self._in_flight[key].wait()
        done = self._in_flight[key] = anyio.Event()
        try:
            return await self._complete(req, key)
        finally:
            self._in_flight.pop(key, None)
            done.set()

    async def _complete(self, req: LLMRequest, key: str) -> LLMResponse:
        recorded = self.store.llm_response(key)
        if recorded is not None:  # from an earlier session of this run: already counted
            resp = LLMResponse.from_dict(recorded)
            if billed(resp):
                return resp
        if self.replay_source is not None:
            return self._replayed(req, key)
        assert self.client is not None
        async with self._gate if self._gate is not None else contextlib.nullcontext():
            with self.budget.llm_call():
                self.asking[req.phase] += 1
                try:
                    resp = await self.client.complete(req)
                finally:
                    self.asking[req.phase] -= 1
                if resp.ok and not resp.text.strip():
                    resp.error = LLMError(ErrorKind.EMPTY, "the model returned no text")
                self._record(req, key, resp, replayed=False)
        return resp

    def _replayed(self, req: LLMRequest, key: str) -> LLMResponse:
        assert self.replay_source is not None
        recorded = self.replay_source.llm_response(key)
        if recorded is None:
            if self.replay_stop is not None:
                raise RunStopped(self.replay_stop)
            raise ReplayMiss(
                f"replay: the recorded run has no answer for a {req.phase} request to {req.model}"
            )
        resp = LLMResponse.from_dict(recorded)
        self._record(req, key, resp, replayed=True)
        return resp

    def _record(self, req: LLMRequest, key: str, resp: LLMResponse, replayed: bool) -> None:
        self.store.record_llm(
            key, req.model, req.phase, resp.ok, request_record(req), resp.to_dict()
        )
        self.ledger.add_llm(req.phase, req.model, resp, replayed=replayed)
        if resp.error is not None:
            self.store.event(
                "llm_error",
                model=req.model,
                phase=req.phase,
                kind=resp.error.kind.value,
                message=resp.error.message[:500],
            )


#: the suffix of a held-out evaluation's key (the journal keeps both kinds in one table)
HELD_OUT_KEY = "/held-out"


def held_out_seed(seed: int) -> int:
    """The run seed of the held-out check: fixed by the run's seed (a run replays exactly),
    unrelated to it, so no input the search evaluated on is among the held-out ones."""
    return int.from_bytes(hashlib.sha256(f"held-out\0{seed}".encode()).digest()[:4], "big")


def evaluation_key(backend: Backend, problem: Problem, code: str) -> str:
    blob = json.dumps(
        [
            backend.name,
            problem.id,
            backend.hardware.model_dump(mode="json"),
            backend.options.model_dump(mode="json"),
            code,
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class Evaluator:
    """Evaluates programs once each: cached in the store, de-duplicated while in flight,
    bounded by evaluation slots (``limiter``: slots shared with other runs), run by the
    ``executor`` (default: this machine).

    Each evaluation that ends is journaled and counted once: its result, or (an
    ``INFRA_ERROR``, the machine's failure, not the program's) an ``INFRA_ERROR`` event,
    evaluated again on resume. Each attempt lost with its node is journaled as it happens
    (``ATTEMPT_LOST``). An evaluation that never ended (the executor stopped the run, or
    it was cancelled) is not counted: it runs again on resume."""

    def __init__(
        self,
        backend: Backend,
        problem: Problem,
        store: RunStore,
        ledger: Ledger,
        budget: Budget,
        slots: int,
        timeout_s: float,
        seed: int,
        want_feedback: bool,
        recorded: RunStore | None = None,
        recorded_stop: str | None = None,
        executor: Executor | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.backend = backend
        self.problem = problem
        self.store = store
        self.ledger = ledger
        self.budget = budget
        self.limiter = limiter or anyio.CapacityLimiter(max(1, slots))
        self.executor = executor or LocalExecutor()
        self.timeout_s = timeout_s
        self.seed = seed
        self.want_feedback = want_feedback
        self.recorded = recorded  # replay: another run's evaluations, reused as measured
        self.recorded_stop = recorded_stop  # ... which stopped early, for this reason
        self._in_flight: dict[str, anyio.Event] = {}

    @property
    def running(self) -> int:
        return int(self.limiter.borrowed_tokens)

    @property
    def queued(self) -> int:
        return self.limiter.statistics().tasks_waiting

    @property
    def stalled(self) -> str | None:
        """Why evaluations cannot run now, when the executor says so."""
        stalled = getattr(self.executor, "stalled", None)  # a plugin's executor may not say
        return stalled() if stalled is not None else None

    def context(self, held_out: bool = False) -> EvalContext:
        return EvalContext(
            seed=held_out_seed(self.seed) if held_out else self.seed,
            timeout_s=self.timeout_s,
            want_feedback=self.want_feedback and not held_out,
        )

    async def evaluate(
        self, code: str, use_cache: bool = True, held_out: bool = False
    ) -> tuple[str, EvalResult]:
        """``code``'s evaluation; ``held_out``: on the backend's held-out problem
        (``Backend.held_out_problem``, else the same one) with inputs from other seeds."""
        problem = self.problem
        if held_out:
            problem = self.backend.held_out_problem(self.problem) or self.problem
        key = evaluation_key(self.backend, problem, code) + (HELD_OUT_KEY if held_out else "")
        while use_cache and key in self._in_flight:
            await self._in_flight[key].wait()
        cached = self.store.evaluation(key) if use_cache else None
        if cached is None and use_cache and self.recorded is not None:
            cached = self.recorded.evaluation(key)
            if cached is not None:
                self.store.save_evaluation(key, cached)
            elif self.recorded_stop is not None:  # past where the recorded run stopped
                raise RunStopped(self.recorded_stop)
        if cached is not None:
            self.ledger.evaluations_cached += 1
            return key, EvalResult.from_dict(cached)
        self.budget.check_evaluation()
        done = self._in_flight[key] = anyio.Event()

        def attempt_lost(loss: dict[str, Any]) -> None:
            self.store.event(ATTEMPT_LOST, key=key, **loss)

        try:
            self.ledger.evaluations += 1  # in flight counts against budget.evaluations
            try:
                async with self.limiter:
                    started = time.monotonic()
                    result = await self.executor.evaluate(
                        EvalRequest(
                            self.backend, problem, code, self.context(held_out), attempt_lost
                        )
                    )
                    # the whole evaluation as the engine waited for it, whatever the backend
                    # counts
                    result.duration_s = time.monotonic() - started
                    self.ledger.eval_seconds += result.duration_s
            except BaseException:  # never ended (stopped, cancelled): not an evaluation
                self.ledger.evaluations -= 1
                raise
            if result.failure == FailureKind.INFRA_ERROR:
                self.store.event(INFRA_ERROR, key=key, result=result.to_dict())
            else:
                self.store.save_evaluation(key, result.to_dict())
            return key, result
        finally:
            self._in_flight.pop(key, None)
            done.set()
