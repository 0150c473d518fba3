"""The protocol test server itself: scripting, latency, faults, thread mode."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time

import openai
import pytest

from autocomp_core.testing import Fault, FaultPlan, LLMTestServer, Reply


def test_llm_server_in_thread_serves_a_subprocess_client():
    """Thread mode: a client in another process (as an engine subprocess would be)."""
    server = LLMTestServer(lambda r: "code" if "Optimized code" in r.prompt else "plan")
    server.start_in_thread()
    try:
        script = textwrap.dedent(f"""
            import openai
            client = openai.OpenAI(api_key="x", base_url="{server.openai_base_url}", max_retries=0)
            for ask in ["Propose a plan", "Optimized code:"]:
                r = client.chat.completions.create(model="m", messages=[{{"role": "user", "content": ask}}])
                print(r.choices[0].message.content)
        """)
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["plan", "code"]
        assert server.request_count == 2 and server.requests[1].prompt == "Optimized code:"
    finally:
        server.stop_thread()


def test_llm_server_faults_are_deterministic_from_the_seed():
    def faults_for(seed):
        plan = FaultPlan(rate=0.3)
        rng = random.Random(seed)
        return [plan.choose(None, rng) for _ in range(200)]

    assert faults_for(3) == faults_for(3) != faults_for(4)
    drawn = faults_for(3)
    assert 30 < sum(f is not None for f in drawn) < 90
    assert {f for f in drawn if f} <= set(Fault)


@pytest.mark.asyncio
async def test_llm_server_latency_per_prompt_and_scripted_errors():
    latency = lambda r: 0.3 if "slow" in r.prompt else 0.0  # noqa: E731

    def responder(request):
        if "fail" in request.prompt:
            return Reply(status=503, error_message="maintenance", headers={"Retry-After": "7"})
        return Reply(text="a long answer " * 50)

    async with LLMTestServer(responder, latency=latency) as server:
        client = openai.AsyncOpenAI(api_key="x", base_url=server.openai_base_url, max_retries=0)
        fast = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "quick"}], max_tokens=10
        )
        started = time.monotonic()
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "slow"}]
        )
        slow_s = time.monotonic() - started
        with pytest.raises(openai.InternalServerError) as failure:
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "fail"}]
            )
        await client.close()
    # max_tokens cuts the answer and says so
    assert fast.choices[0].finish_reason == "length" and fast.usage.completion_tokens == 10
    assert failure.value.status_code == 503 and failure.value.response.headers["retry-after"] == "7"
    quick, slow, _ = server.requests
    assert slow.params == {} and quick.params == {"max_tokens": 10}
    assert slow_s >= 0.3  # a lower bound: the slow prompt's answer cannot come sooner
