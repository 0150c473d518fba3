"""Rate buckets, backoff and error classification, as units."""

from __future__ import annotations

import time

import anyio
import pytest

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient
from autocomp_core.llm.errors import _rejected_param, classify_status, parse_retry_after
from autocomp_core.llm.limits import Limits, TokenBucket
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import ErrorKind

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_llm_token_bucket_refills_at_the_per_minute_rate():
    clock = FakeClock()
    bucket = TokenBucket(per_minute=60, burst_s=5, clock=clock)  # 1/s, holds 5
    assert bucket.capacity == 5 and bucket.wait_time(5) == 0
    bucket.charge(5)
    assert bucket.wait_time(1) == pytest.approx(1.0)
    clock.now += 2.5
    assert bucket.wait_time(2) == 0 and bucket.wait_time(3) == pytest.approx(0.5)
    clock.now += 1000
    assert bucket.level <= 5 and bucket.wait_time(5) == 0  # never more than the burst


def test_llm_token_bucket_debt_from_actual_usage():
    clock = FakeClock()
    tokens = TokenBucket(per_minute=6000, burst_s=1, clock=clock)  # 100 tokens/s, holds 100
    tokens.charge(100 + 300)  # a reply far larger than estimated leaves a debt
    assert tokens.wait_time(50) == pytest.approx(3.5)
    assert tokens.wait_time(10_000) == pytest.approx(4.0)  # capped at capacity: no deadlock


@pytest.mark.asyncio
async def test_llm_limits_slot_waits_for_the_bucket():
    limits = Limits(4, {}, {}, {"openai": 600}, {"openai": 60_000}, burst_s=0.1)
    started = time.monotonic()
    for _ in range(3):  # 10 requests/s holding one: the 2nd and 3rd wait ~0.1 s each
        async with limits.slot(("openai",), "openai::m", 10) as settle:
            settle(10)
    assert time.monotonic() - started >= 0.18
    async with limits.slot(("anthropic",), "anthropic::m", 10**9):  # unlimited provider
        pass


@pytest.mark.asyncio
async def test_llm_limits_provider_concurrency_and_global():
    limits = Limits(3, {"vllm": 1}, {}, {}, {}, burst_s=1)
    active = {"vllm": 0, "peak_vllm": 0, "all": 0, "peak_all": 0}

    async def use(names):
        async with limits.slot(names, "m", 1):
            active["all"] += 1
            active["peak_all"] = max(active["peak_all"], active["all"])
            if "vllm" in names:
                active["vllm"] += 1
                active["peak_vllm"] = max(active["peak_vllm"], active["vllm"])
            await anyio.sleep(0.02)
            active["all"] -= 1
            if "vllm" in names:
                active["vllm"] -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(use, ("vllm", "openai-compatible"))
            tg.start_soon(use, ("openai", "openai"))
    assert active["peak_vllm"] == 1 and active["peak_all"] == 3


def test_llm_backoff_full_jitter_and_retry_after_floor():
    client = LLMClient(LLMSettings(backoff_base_s=1, backoff_max_s=8), PROVIDERS)
    for retry, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 8)]:
        delays = [client._backoff(retry, None) for _ in range(300)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8 and min(delays) < ceiling * 0.2  # spread out
    assert all(client._backoff(1, 5.0) >= 5.0 for _ in range(50))
    assert client._backoff(1, 10**6) == 900  # a silly Retry-After is capped


@pytest.mark.parametrize(
    "status, message, kind",
    [
        (429, "slow down", ErrorKind.RATE_LIMIT),
        (529, "Overloaded", ErrorKind.OVERLOADED),
        (503, "The engine is currently overloaded", ErrorKind.OVERLOADED),
        (503, "unavailable", ErrorKind.SERVER),
        (500, "oops", ErrorKind.SERVER),
        (401, "bad key", ErrorKind.AUTHENTICATION),
        (403, "forbidden", ErrorKind.AUTHENTICATION),
        (408, "timeout", ErrorKind.TIMEOUT),
        (400, "Invalid 'messages'", ErrorKind.BAD_REQUEST),
        (400, "maximum context length is 8192 tokens", ErrorKind.CONTEXT_LENGTH),
        (413, "prompt is too long", ErrorKind.CONTEXT_LENGTH),
        (404, "model not found", ErrorKind.BAD_REQUEST),
    ],
)
def test_llm_classify_status(status, message, kind):
    assert classify_status(status, message) is kind


def test_llm_retry_after_header_forms():
    assert parse_retry_after("3") == 3.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < parse_retry_after(http_date) <= 31


@pytest.mark.parametrize(
    "message, param",
    [
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            "max_tokens",
        ),
        ("Unsupported value: 'temperature' does not support 0.2 with this model.", "temperature"),
        ("Unrecognized request argument supplied: reasoning_effort", "reasoning_effort"),
        ("top_k: Extra inputs are not permitted", "top_k"),
        ("`temperature` and `top_p` cannot both be specified for this model.", None),
        ("Invalid 'messages[0].content': string too long.", None),
    ],
)
def test_llm_rejected_parameter_detection(message, param):
    assert _rejected_param(Exception(message), message) == param
