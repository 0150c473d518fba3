"""The two doors through which the search spends: LLM calls and evaluations.

Both consult the run store first, so a resumed run repeats no answered call and no
finished evaluation, and both check the budgets before spending.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from typing import Any, Protocol

import anyio
import structlog

from .accounting import Budget, Ledger
from .backend import Backend, EvalContext, EvalResult, FailureKind, Problem
from .executors import EvalRequest, Executor
from .executors.local import LocalExecutor
from .llm.types import ErrorKind, LLMError, LLMRequest, LLMResponse
from .store import RunStore

log = structlog.get_logger("autocomp")


class Completer(Protocol):
    async def complete(self, request: LLMRequest) -> LLMResponse: ...


class ReplayMiss(Exception):
    """Replay met a request the recorded run never made."""


def request_record(req: LLMRequest) -> dict[str, Any]:
    return {"model": req.model, "phase": req.phase, "sample": req.sample,
            "temperature": req.temperature, "max_tokens": req.max_tokens,
            "reasoning_effort": req.reasoning_effort,
            "response_format": req.response_format.value,
            "system": req.prompt.system, "static": req.prompt.static,
            "dynamic": req.prompt.dynamic, "context": req.prompt.context}


class JournaledLLM:
    """Answers from the journal when it can; otherwise asks the LLM and records the answer.

    In replay mode (``client`` is None) every answer must come from ``replay_source``.
    """

    def __init__(self, client: Completer | None, store: RunStore, ledger: Ledger, budget: Budget,
                 replay_source: RunStore | None = None) -> None:
        self.client = client
        self.store = store
        self.ledger = ledger
        self.budget = budget
        self.replay_source = replay_source
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
        if recorded is not None:  # answered in an earlier session of this run: already counted
            return LLMResponse.from_dict(recorded)
        if self.replay_source is not None:
            recorded = self.replay_source.llm_response(key)
            if recorded is None:
                raise ReplayMiss(f"replay: the recorded run has no answer for a {req.phase} "
                                 f"request to {req.model}")
            resp = LLMResponse.from_dict(recorded)
            self.store.record_llm(key, req.model, req.phase, True, request_record(req),
                                  resp.to_dict())
            self.ledger.add_llm(req.phase, req.model, resp, replayed=True)
            return resp
        self.budget.check_llm()
        assert self.client is not None
        self.asking[req.phase] += 1
        try:
            resp = await self.client.complete(req)
        finally:
            self.asking[req.phase] -= 1
        if resp.ok and not resp.text.strip():
            resp.error = LLMError(ErrorKind.EMPTY, "the model returned no text")
        self.store.record_llm(key, req.model, req.phase, resp.ok, request_record(req),
                              resp.to_dict())
        self.ledger.add_llm(req.phase, req.model, resp, replayed=False)
        if resp.error is not None:
            self.store.event("llm_error", model=req.model, phase=req.phase,
                             kind=resp.error.kind.value, message=resp.error.message[:500])
        return resp


def evaluation_key(backend: Backend, problem: Problem, code: str) -> str:
    blob = json.dumps([backend.name, problem.id, backend.hardware.model_dump(mode="json"),
                       backend.options.model_dump(mode="json"), code],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


async def evaluate_guarded(backend: Backend, problem: Problem, code: str,
                           ctx: EvalContext) -> EvalResult:
    """``backend.evaluate`` as the engine calls it (the contract in ``Backend.evaluate``):
    an exception is the evaluator's own failure and becomes an ``INFRA_ERROR`` result, and
    a backend that overruns its own limits by far is stopped."""
    limit = ctx.timeout_s * 3 + 60  # the backend enforces its limits; this is the last line
    try:
        with anyio.fail_after(limit):
            return await backend.evaluate(problem, code, ctx)
    except TimeoutError:
        return EvalResult(correct=False, failure=FailureKind.TIMEOUT,
                          feedback=f"evaluation exceeded {limit:.0f} s")
    except Exception as exc:  # a backend bug or a missing tool must not end the run
        log.exception("backend evaluate raised", backend=backend.name)
        return EvalResult(correct=False, failure=FailureKind.INFRA_ERROR,
                          feedback=f"evaluator error: {type(exc).__name__}: {exc}")


class Evaluator:
    """Evaluates programs once each: cached in the store, de-duplicated while in flight,
    bounded by evaluation slots (``limiter``: slots shared with other runs), run by the
    ``executor`` (default: this machine)."""

    def __init__(self, backend: Backend, problem: Problem, store: RunStore, ledger: Ledger,
                 budget: Budget, slots: int, timeout_s: float, seed: int,
                 want_feedback: bool, recorded: RunStore | None = None,
                 executor: Executor | None = None,
                 limiter: anyio.CapacityLimiter | None = None) -> None:
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
        self._in_flight: dict[str, anyio.Event] = {}

    @property
    def running(self) -> int:
        return int(self.limiter.borrowed_tokens)

    @property
    def queued(self) -> int:
        return self.limiter.statistics().tasks_waiting

    def context(self) -> EvalContext:
        return EvalContext(seed=self.seed, timeout_s=self.timeout_s,
                           want_feedback=self.want_feedback)

    async def evaluate(self, code: str, use_cache: bool = True) -> tuple[str, EvalResult]:
        key = evaluation_key(self.backend, self.problem, code)
        while use_cache and key in self._in_flight:
            await self._in_flight[key].wait()
        cached = self.store.evaluation(key) if use_cache else None
        if cached is None and use_cache and self.recorded is not None:
            cached = self.recorded.evaluation(key)
            if cached is not None:
                self.store.save_evaluation(key, cached)
        if cached is not None:
            self.ledger.evaluations_cached += 1
            return key, EvalResult.from_dict(cached)
        self.budget.check_evaluation()
        done = self._in_flight[key] = anyio.Event()
        try:
            self.ledger.evaluations += 1
            async with self.limiter:
                started = time.monotonic()
                result = await self.executor.evaluate(
                    EvalRequest(self.backend, self.problem, code, self.context()))
                # the whole evaluation as the engine waited for it, whatever the backend counts
                result.duration_s = time.monotonic() - started
                self.ledger.eval_seconds += result.duration_s
            if result.failure != FailureKind.INFRA_ERROR:
                self.store.save_evaluation(key, result.to_dict())
            return key, result
        finally:
            self._in_flight.pop(key, None)
            done.set()
