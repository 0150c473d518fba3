"""Concurrency and rate limits: global, per provider and per model.

Rate limits are token buckets refilled continuously at ``per_minute / 60`` per second and
holding at most ``burst_s`` seconds' worth, so a per-minute limit is also respected over
shorter windows (providers enforce theirs that way too). The token bucket may go into
debt: a request is admitted on its estimated size and charged its real size afterwards.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable

import anyio


class TokenBucket:
    def __init__(
        self, per_minute: float, burst_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ):
        if per_minute <= 0:
            raise ValueError(f"a per-minute limit must be positive, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._clock = clock
        self._updated = clock()
        self._lock = anyio.Lock()  # first come, first served

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate)
        self._updated = now

    def wait_time(self, amount: float) -> float:
        """Seconds until ``amount`` could be taken (0 if now)."""
        self._refill()
        amount = min(amount, self.capacity)
        return max(0.0, (amount - self.level) / self.rate)

    async def acquire(self, amount: float = 1.0) -> None:
        async with self._lock:
            while (delay := self.wait_time(amount)) > 0:
                await anyio.sleep(delay)
            self.level -= min(amount, self.capacity)

    def charge(self, amount: float) -> None:
        """Take ``amount`` more (or give back when negative), possibly going into debt."""
        self._refill()
        self.level = min(self.capacity, self.level - amount)


class Limits:
    """All limiters of one LLM client, created on first use inside the event loop."""

    def __init__(
        self,
        max_concurrency: int,
        provider_concurrency: dict[str, int],
        model_concurrency: dict[str, int],
        requests_per_minute: dict[str, int],
        tokens_per_minute: dict[str, int],
        burst_s: float,
    ):
        self._global = anyio.CapacityLimiter(max_concurrency)
        self._concurrency: dict[str, anyio.CapacityLimiter] = {}
        self._config = (provider_concurrency, model_concurrency)
        self._rpm = {k: TokenBucket(v, burst_s) for k, v in requests_per_minute.items()}
        self._tpm = {k: TokenBucket(v, burst_s) for k, v in tokens_per_minute.items()}

    def _limiter(self, kind: str, name: str, limit: int) -> anyio.CapacityLimiter:
        key = f"{kind}:{name}"
        if key not in self._concurrency:
            self._concurrency[key] = anyio.CapacityLimiter(limit)
        return self._concurrency[key]

    @staticmethod
    def _first(table: dict, names: tuple[str, ...]):
        return next((table[n] for n in names if n in table), None)

    @contextlib.asynccontextmanager
    async def slot(
        self, providers: tuple[str, ...], model: str, estimated_tokens: int
    ) -> AsyncIterator[Callable[[int], None]]:
        """Hold every limit for one request. Yields ``settle(actual_tokens)``.

        ``providers`` lists the names the provider is known by (prefix as written, spec
        name); the first one configured applies.
        """
        provider_limits, model_limits = self._config
        async with contextlib.AsyncExitStack() as stack:
            limit = self._first(model_limits, (model,))
            if limit:
                await stack.enter_async_context(self._limiter("model", model, limit))
            limit = self._first(provider_limits, providers)
            if limit:
                await stack.enter_async_context(self._limiter("provider", providers[-1], limit))
            # Rate limits before the global slot: a request waiting on its provider's
            # rate must not hold a slot another provider could use.
            rpm = self._first(self._rpm, providers)
            if rpm is not None:
                await rpm.acquire(1)
            tpm = self._first(self._tpm, providers)
            if tpm is not None:
                await tpm.acquire(estimated_tokens)
            await stack.enter_async_context(self._global)

            def settle(actual_tokens: int) -> None:
                if tpm is not None:
                    tpm.charge(actual_tokens - min(estimated_tokens, tpm.capacity))

            yield settle
