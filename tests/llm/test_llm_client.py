"""LLMClient against the protocol server: retries, limits, params, caching, usage, edits."""

from __future__ import annotations

import json
import os

import anyio
import pytest

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, check_models
from autocomp_core.llm.parsing import parse_edits
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import ErrorKind, ResponseFormat
from autocomp_core.testing import Fault, FaultPlan, LLMTestServer, Reply, count_tokens

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()

BOTH = ["openai::gpt-4.1", "anthropic::claude-sonnet-4-6"]


@pytest.mark.asyncio
@pytest.mark.parametrize("model", BOTH)
async def test_llm_retry_after_is_honoured(model, api_keys, make_settings, ask):
    plan = FaultPlan(force=lambda r: Fault.RATE_LIMIT if r.index == 0 else None, retry_after_s=1.0)
    async with LLMTestServer(faults=plan) as server:
        # backoff_max is tiny: only Retry-After can explain a pause of a second
        async with LLMClient(make_settings(server, backoff_max_s=0.01), PROVIDERS) as client:
            response = await client.complete(ask(model))
    assert response.ok and response.errors[0].kind is ErrorKind.RATE_LIMIT
    first, second = server.requests
    assert second.arrived_at - first.arrived_at >= 0.95


@pytest.mark.asyncio
@pytest.mark.parametrize("model", BOTH)
async def test_llm_authentication_failure_is_not_retried(model, api_keys, make_settings, ask):
    async with LLMTestServer(api_key="the-right-key-000000") as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(model))
    assert response.error.kind is ErrorKind.AUTHENTICATION and response.error.status == 401
    assert response.attempts == 1 and server.request_count == 1
    env = "OPENAI_API_KEY" if model.startswith("openai") else "ANTHROPIC_API_KEY"
    assert server.requests[0].api_key == os.environ[env]


@pytest.mark.asyncio
@pytest.mark.parametrize("model", BOTH)
async def test_llm_bad_request_is_not_retried(model, api_keys, make_settings, ask):
    responder = lambda r: Reply(status=400, error_message="messages: roles must alternate")  # noqa: E731
    async with LLMTestServer(responder) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(model))
    assert response.error.kind is ErrorKind.BAD_REQUEST and response.attempts == 1
    assert server.request_count == 1 and "roles must alternate" in response.error.message


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "model, message",
    [
        (
            "openai::gpt-4.1",
            "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 131072 tokens.",
        ),
        ("anthropic::claude-sonnet-4-6", "prompt is too long: 210000 tokens > 200000 maximum"),
    ],
)
async def test_llm_context_length_is_recorded(model, message, api_keys, make_settings, ask):
    async with LLMTestServer(lambda r: Reply(status=400, error_message=message)) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(model, phase="code"))
    assert response.error.kind is ErrorKind.CONTEXT_LENGTH and server.request_count == 1
    assert client.usage.to_dict()["by_phase"]["code"][model]["errors"] == {"context_length": 1}


@pytest.mark.asyncio
async def test_llm_rejected_parameters_are_learned_per_model(api_keys, make_settings, ask):
    def strict_server(request):
        if "temperature" in request.params:
            return Reply(
                status=400,
                param="temperature",
                error_message="Unsupported value: 'temperature' does not support 0.7 "
                "with this model. Only the default (1) value is supported.",
            )
        if "reasoning_effort" in request.params:
            return Reply(
                status=400, error_message="Unrecognized request argument supplied: reasoning_effort"
            )
        return "fine"

    async with LLMTestServer(strict_server) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            compat = "openai-compatible::org/model:7b"
            first = await client.complete(ask(compat, temperature=0.7))
            second = await client.complete(ask(compat, temperature=0.7, sample=1))
            reasoning = await client.complete(ask("openai::gpt-5.4-mini"))
            assert client.rejected_params(compat) == {"temperature"}
            assert client.rejected_params("openai::gpt-5.4-mini") == {"reasoning_effort"}
            other = await client.complete(ask("openai::gpt-4.1", temperature=0.7))
    assert first.ok and first.attempts == 2 and first.errors[0].kind is ErrorKind.BAD_REQUEST
    assert second.ok and second.attempts == 1  # learned: sent without it straight away
    assert reasoning.ok and reasoning.attempts == 2
    params = [r.params for r in server.requests]
    assert "temperature" in params[0] and "temperature" not in params[1]
    assert "temperature" not in params[2]
    # Another model is not affected by what one model refused: it learns on its own.
    assert other.ok and other.attempts == 2
    assert "temperature" in server.requests[5].params
    assert "temperature" not in server.requests[6].params


@pytest.mark.asyncio
async def test_llm_request_shapes_per_model_family(api_keys, make_settings, ask):
    asked = {"plan": "high", "code": "medium"}
    async with LLMTestServer() as server:
        async with LLMClient(
            make_settings(server, max_tokens=500, reasoning=asked), PROVIDERS
        ) as client:
            await client.complete(ask("openai::gpt-5.4-mini", phase="plan", temperature=0.7))
            await client.complete(ask("openai::gpt-5.4-mini", phase="code"))
            await client.complete(ask("openai::gpt-4.1", temperature=0.7))
            await client.complete(ask("openai-compatible::m", temperature=0.3, max_tokens=64))
            await client.complete(ask("anthropic::claude-opus-4-7", temperature=0.7))
    plan, code, gpt41, compat, claude = [r.params for r in server.requests]
    # reasoning models: effort by phase, no temperature, max_completion_tokens
    assert plan["reasoning_effort"] == "high" and "temperature" not in plan
    assert code["reasoning_effort"] == "medium" and plan["max_completion_tokens"] == 500
    assert gpt41["temperature"] == 0.7 and "reasoning_effort" not in gpt41
    assert compat == {"temperature": 0.3, "max_tokens": 64, "seed": 0}
    # Claude thinks with the plan's budget ("high"), on top of the answer's 500 tokens
    assert claude["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert claude["max_tokens"] == 500 + 16384 and "temperature" not in claude
    # a config that does not ask for reasoning: Claude does not think (no surprise cost)
    async with LLMTestServer() as server:
        async with LLMClient(make_settings(server, max_tokens=500), PROVIDERS) as client:
            await client.complete(ask("anthropic::claude-opus-4-7", temperature=0.7))
    (plain,) = [r.params for r in server.requests]
    assert "thinking" not in plain and plain["max_tokens"] == 500, plain


@pytest.mark.asyncio
async def test_llm_anthropic_prompt_puts_the_static_prefix_in_a_cached_block(
    api_keys, make_settings, ask
):
    async with LLMTestServer() as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            await client.complete(
                ask(
                    "anthropic::claude-sonnet-4-6",
                    "the dynamic part",
                    static="ISA and rules",
                    system="You are an expert.",
                )
            )
            await client.complete(
                ask(
                    "openai::gpt-4.1",
                    "the dynamic part",
                    static="ISA and rules",
                    system="You are an expert.",
                )
            )
    anthropic_request, openai_request = server.requests
    assert anthropic_request.system == "You are an expert."
    assert anthropic_request.messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "ISA and rules", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "the dynamic part"},
            ],
        }
    ]
    user = openai_request.messages[-1]["content"]
    assert user.startswith("ISA and rules") and user.endswith("the dynamic part")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "model",
    [*BOTH, "gemini::gemini-2.5-flash", "bedrock::us.anthropic.claude-sonnet-4-5-20250929-v1:0"],
)
async def test_llm_cached_tokens_are_reported_and_cheaper(model, api_keys, make_settings, ask):
    static = "Architecture, ISA and rules. " * 200  # ~1450 tokens, above the cache minimum
    async with LLMTestServer() as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            cold = await client.complete(ask(model, "first question", static=static))
            warm = await client.complete(ask(model, "second question", static=static))
    assert cold.ok and warm.ok
    assert cold.usage.cached_tokens == 0
    assert warm.usage.cached_tokens >= count_tokens(static) - 128
    assert warm.usage.input_tokens >= warm.usage.cached_tokens
    assert warm.cost_usd < cold.cost_usd
    totals = client.usage.to_dict()["by_model"][model]
    assert totals["cached_tokens"] == warm.usage.cached_tokens
    if model.startswith(("anthropic", "bedrock")):  # explicit cache marks: writes reported
        assert cold.usage.cache_write_tokens >= count_tokens(static) - 128
        assert totals["cache_write_tokens"] == cold.usage.cache_write_tokens


@pytest.mark.asyncio
@pytest.mark.parametrize("model", BOTH)
async def test_llm_structured_edits(model, api_keys, make_settings, ask):
    answer = {"plan": "unroll", "edits": [{"old_str": "i++", "new_str": "i += 2"}]}
    async with LLMTestServer(lambda r: json.dumps(answer)) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(model, response_format=ResponseFormat.EDITS))
    assert response.ok and parse_edits(response.text)[0].new_str == "i += 2"
    params = server.requests[0].params
    if model.startswith("openai"):
        fmt = params["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "code_edits"
        assert fmt["json_schema"]["strict"] is True
    else:
        assert params["tool_choice"] == {"type": "tool", "name": "code_edits"}
        assert params["tools"][0]["input_schema"]["required"] == ["plan", "edits"]


@pytest.mark.asyncio
async def test_llm_requests_per_minute_are_enforced(api_keys, make_settings, ask):
    async with LLMTestServer() as server:
        # 120/min with a one-second burst: 2 at once, then one every half second
        settings = make_settings(server, requests_per_minute={"openai": 120}, rate_burst_s=1)
        async with LLMClient(settings, PROVIDERS) as client:
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(client.complete, ask("openai::gpt-4.1", sample=i))
            # another provider is not held back by OpenAI's limit
            other = await client.complete(ask("anthropic::claude-sonnet-4-6"))
    times = sorted(r.arrived_at for r in server.requests if r.api == "openai")
    assert len(times) == 6 and other.ok
    assert times[-1] - times[0] >= (6 - 2) / 2 - 0.1


@pytest.mark.asyncio
async def test_llm_model_concurrency_is_bounded(api_keys, make_settings, ask):
    async with LLMTestServer(latency=0.2) as server:
        settings = make_settings(server, model_concurrency={"openai::gpt-4.1": 2})
        async with LLMClient(settings, PROVIDERS) as client:
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(client.complete, ask("openai::gpt-4.1", sample=i))
    times = sorted(r.arrived_at for r in server.requests)
    # two at a time: the 3rd and 5th requests wait for a 0.2 s answer each
    assert times[2] - times[0] >= 0.19 and times[4] - times[2] >= 0.19


@pytest.mark.asyncio
async def test_llm_usage_is_aggregated_per_phase_and_model(api_keys, make_settings, ask):
    async with LLMTestServer(
        faults=FaultPlan(force=lambda r: Fault.SERVER_ERROR if r.index == 1 else None)
    ) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            for phase, model in [
                ("plan", "openai::gpt-4.1"),
                ("plan", "openai::gpt-4.1"),
                ("code", "anthropic::claude-sonnet-4-6"),
            ]:
                await client.complete(ask(model, phase=phase))
    usage = client.usage.to_dict()
    plan = usage["by_phase"]["plan"]["openai::gpt-4.1"]
    assert plan["calls"] == 2 and plan["attempts"] == 3 and plan["errors"] == {"server": 1}
    assert plan["failures"] == 0 and plan["input_tokens"] > 0 and plan["cost_usd"] > 0
    assert usage["by_phase"]["code"]["anthropic::claude-sonnet-4-6"]["calls"] == 1
    assert usage["total"]["calls"] == 3
    assert usage["total"]["cost_usd"] == pytest.approx(
        sum(m["cost_usd"] for m in usage["by_model"].values()), abs=1e-6
    )
    assert client.usage.tokens == usage["total"]["input_tokens"] + usage["total"]["output_tokens"]


@pytest.mark.asyncio
async def test_llm_validate_spends_nothing_and_complete_never_raises(api_keys, make_settings, ask):
    async with LLMTestServer() as server:
        client = LLMClient(make_settings(server, aliases={"fast": "openai::gpt-4.1"}), PROVIDERS)
        client.validate_models(["fast", "anthropic::claude-sonnet-4-6"])
        async with client:
            assert server.request_count == 0
            response = await client.complete(ask("nosuch::model"))
            aliased = await client.complete(ask("fast"))
    assert not response.ok and response.error.kind is ErrorKind.BAD_REQUEST
    assert "unknown provider" in response.error.message and response.text == ""
    assert aliased.ok and aliased.model == "openai::gpt-4.1"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "model,api",
    [
        ("anthropic@{base}::claude-sonnet-4-6", "anthropic"),
        ("openai@{base}/v1::gpt-5-mini", "openai"),
    ],
)
async def test_llm_an_endpoint_in_the_model_string_reaches_a_gateway(api_keys, ask, model, api):
    """Teams reach Claude and GPT through proxies: the URL in the model string is the only
    route here (no base_urls), and the provider's own prices still apply."""
    async with LLMTestServer() as server:
        model = model.format(base=server.base_url)
        client = LLMClient(LLMSettings(max_retries=0), PROVIDERS)
        client.validate_models([model])
        async with client:
            response = await client.complete(ask(model))
    assert response.ok, response.error
    assert [r.api for r in server.requests] == [api]
    assert response.cost_usd > 0 and client.missing_price(model) is None


@pytest.mark.asyncio
async def test_llm_a_bug_in_a_provider_propagates(ask):
    """A TypeError inside a provider is a bug: it reaches the caller with its traceback,
    and is not counted as a failed request."""
    from buggy_llm_plugin import BUGGY

    client = LLMClient(LLMSettings(max_retries=3), providers={"buggy": BUGGY})
    async with client:
        with pytest.raises(TypeError, match="has no len"):
            await client.complete(ask("buggy::m"))
    assert client.usage.total.calls == 0


@pytest.mark.asyncio
async def test_llm_cancellation_propagates(api_keys, make_settings, ask):
    plan = FaultPlan(force=lambda r: Fault.HANG)
    async with LLMTestServer(faults=plan) as server:
        async with LLMClient(make_settings(server, timeout_s=60), PROVIDERS) as client:
            finished = []

            async def call():
                finished.append(await client.complete(ask("openai::gpt-4.1")))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while server.request_count == 0:  # wait until it hangs at the server
                    await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
    assert finished == [] and server.request_count == 1 and client.usage.total.calls == 0


@pytest.mark.asyncio
async def test_llm_check_models(api_keys, monkeypatch, make_settings):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    async with LLMTestServer(api_key=os.environ["OPENAI_API_KEY"]) as server:
        rows = await check_models(
            make_settings(server),
            PROVIDERS,
            ["openai::gpt-4.1", "anthropic::claude-sonnet-4-6", "bogus"],
        )
    by_model = {row["model"]: row for row in rows}
    assert by_model["openai::gpt-4.1"]["answers"] is True
    assert by_model["openai::gpt-4.1"]["key"] == "environment"
    assert by_model["anthropic::claude-sonnet-4-6"]["key"] == "missing"
    assert "ANTHROPIC_API_KEY" in by_model["anthropic::claude-sonnet-4-6"]["error"]
    assert by_model["bogus"]["answers"] is False and "no provider" in by_model["bogus"]["error"]
    assert server.requests[0].params["max_completion_tokens"] == 16


@pytest.mark.asyncio
async def test_llm_sample_index_is_sent_as_seed_and_dropped_where_refused(
    api_keys, make_settings, ask
):
    def server_side(request):
        if request.model == "no-seeds" and "seed" in request.params:
            return Reply(
                status=400,
                param="seed",
                error_message="Unrecognized request argument supplied: seed",
            )
        return f"seed {request.params.get('seed')}"

    async with LLMTestServer(server_side) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            seeded = await client.complete(ask("openai-compatible::vllm-model", sample=17))
            refused = await client.complete(ask("openai-compatible::no-seeds", sample=3))
    assert seeded.ok and seeded.text == "seed 17"
    assert refused.ok and refused.text == "seed None" and refused.attempts == 2
