"""Every injected fault, through the real OpenAI, Anthropic, google-genai and AWS SDKs,
classified and retried."""

from __future__ import annotations

import anyio
import pytest

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient
from autocomp_core.llm.types import ErrorKind
from autocomp_core.testing import Fault, FaultPlan, LLMTestServer

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()

GEMINI = "gemini::gemini-2.5-flash"
BEDROCK = "bedrock::anthropic.claude-sonnet-4-5-20250929-v1:0"
MODELS = [
    "openai::gpt-4.1",
    "anthropic::claude-sonnet-4-6",
    "openai-compatible::org/m:7b",
    GEMINI,
    BEDROCK,
]
EXPECTED = {
    Fault.RATE_LIMIT: ErrorKind.RATE_LIMIT,
    Fault.SERVER_ERROR: ErrorKind.SERVER,
    Fault.OVERLOADED: ErrorKind.OVERLOADED,
    Fault.HANG: ErrorKind.TIMEOUT,
    Fault.DROP: ErrorKind.CONNECTION,
    Fault.MALFORMED_JSON: ErrorKind.SERVER,
    Fault.EMPTY: ErrorKind.EMPTY,
    Fault.TRUNCATE: ErrorKind.TRUNCATED,
}


def timeout_for(fault) -> float:
    """1 s where the fault is a hang (the test waits it out); a loaded machine's answer to
    anything else must not be mistaken for one."""
    return 1.0 if fault is Fault.HANG else 30.0


def first_only(fault):
    return lambda request: fault if request.index == 0 else None


@pytest.mark.asyncio
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("fault", list(Fault))
async def test_llm_fault_once_then_success(fault, model, api_keys, make_settings, ask):
    plan = FaultPlan(force=first_only(fault), retry_after_s=0.01)
    async with LLMTestServer(faults=plan) as server:
        async with LLMClient(
            make_settings(server, timeout_s=timeout_for(fault)), PROVIDERS
        ) as client:
            response = await client.complete(ask(model))
    kind = EXPECTED[fault]
    assert server.requests[0].model == model.split("::", 1)[1]  # ids with / and : intact
    assert response.errors[0].kind is kind
    if kind.retryable:
        assert response.ok and response.text == "This is a scripted reply."
        assert response.attempts == 2 and server.request_count == 2
    else:  # truncation is final: a cut answer is no plan and no program
        assert not response.ok and response.error.kind is kind and response.text == ""
        assert response.attempts == 1 and server.request_count == 1
        assert response.usage.output_tokens > 0  # the tokens were still billed


@pytest.mark.asyncio
@pytest.mark.parametrize("model", MODELS[:2])
@pytest.mark.parametrize("fault", [f for f in Fault if EXPECTED[f].retryable])
async def test_llm_persistent_fault_gives_up_with_every_attempt_recorded(
    fault, model, api_keys, make_settings, ask
):
    plan = FaultPlan(force=lambda request: fault, retry_after_s=0.01)
    async with LLMTestServer(faults=plan) as server:
        async with LLMClient(
            make_settings(server, timeout_s=timeout_for(fault), max_retries=2), PROVIDERS
        ) as client:
            response = await client.complete(ask(model))
    assert not response.ok and response.text == ""
    assert response.attempts == 3 == server.request_count == len(response.errors)
    assert all(e.kind is EXPECTED[fault] for e in response.errors)
    assert response.error == response.errors[-1]
    totals = client.usage.to_dict()["total"]
    assert totals["failures"] == 1 and totals["errors"] == {EXPECTED[fault].value: 3}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "models, kinds, timeout_s",
    [
        (MODELS[:3], tuple(Fault), 1.0),
        # A hang needs a 1 s timeout, which a loaded machine's ordinary answers can exceed
        # once five SDKs share it: the native providers' hangs are tested one by one above.
        (MODELS[3:], tuple(f for f in Fault if f is not Fault.HANG), 30.0),
    ],
    ids=["openai-anthropic-compatible", "gemini-bedrock"],
)
async def test_llm_thirty_percent_faults_every_call_ends_and_every_failure_is_recorded(
    models, kinds, timeout_s, api_keys, aws_credentials, make_settings, ask
):
    plan = FaultPlan(rate=0.3, kinds=kinds, retry_after_s=0.01)
    async with LLMTestServer(faults=plan, seed=7, aws_credentials=aws_credentials) as server:
        settings = make_settings(server, timeout_s=timeout_s, max_concurrency=25)
        responses = [None] * 100
        async with LLMClient(settings, PROVIDERS) as client:

            async def call(i):
                model = models[i % len(models)]
                responses[i] = await client.complete(ask(model, f"request {i}", sample=i))

            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(call, i)
    faulted = [r for r in server.requests if r.fault is not None]
    assert len(faulted) > 20  # the plan really injected faults
    assert all(r is not None for r in responses)
    for response in responses:
        assert response.ok or response.error is not None
        assert response.ok == (response.text == "This is a scripted reply.")
        if not response.ok:
            assert response.error in response.errors and response.text == ""
    # Every injected fault is one recorded failed attempt, none lost, none invented.
    assert sum(len(r.errors) for r in responses) == len(faulted)
    assert sum(r.attempts for r in responses) == server.request_count
    totals = client.usage.to_dict()["total"]
    assert totals["calls"] == 100
    assert totals["failures"] == sum(1 for r in responses if not r.ok)
    assert sum(totals["errors"].values()) == len(faulted)
