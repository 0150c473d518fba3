"""Gemini (google-genai) and Bedrock (botocore, SigV4) against the protocol server; the
per-phase reasoning setting on every provider; Together and Ollama presets end to end."""

from __future__ import annotations

import json
import os
import sys

import pytest
from structlog.testing import capture_logs

from autocomp_core.api import optimize_async
from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, check_models
from autocomp_core.llm.errors import LLMConfigError
from autocomp_core.llm.parsing import parse_edits
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import ErrorKind, ResponseFormat
from autocomp_core.testing import Fault, FaultPlan, LLMTestServer, Reply

PROVIDERS = build_registry().llm_providers()
TOGETHER_KEY = "together-key-00000000000000"

GEMINI = "gemini::gemini-2.5-flash"
CLAUDE_ON_BEDROCK = "bedrock::us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "bedrock::amazon.nova-pro-v1:0"
LLAMA = "bedrock::meta.llama3-3-70b-instruct-v1:0"


# ---- request shapes -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_gemini_request_carries_system_static_first_thinking_and_limits(
    api_keys, make_settings, ask
):
    async with LLMTestServer() as server:
        async with LLMClient(make_settings(server, max_tokens=300), PROVIDERS) as client:
            plan = await client.complete(ask(GEMINI, "dyn", static="ISA", system="sys", sample=3))
            code = await client.complete(ask(GEMINI, phase="code", temperature=0.2))
            three = await client.complete(ask("gemini::gemini-3-pro-preview", phase="code"))
            flash = await client.complete(ask("gemini::gemini-3-flash-preview", phase="code"))
    assert plan.ok and code.ok and three.ok and flash.ok
    first, second, third, fourth = server.requests
    assert first.path.endswith("/models/gemini-2.5-flash:generateContent")  # v1 or v1beta
    assert first.api_key == os.environ["GEMINI_API_KEY"] and first.system == "sys"
    assert first.messages == [{"role": "user", "parts": [{"text": "ISA"}, {"text": "dyn"}]}]
    config = first.params["generationConfig"]
    assert config["maxOutputTokens"] == 300 and config["seed"] == 3
    assert config["thinkingConfig"] == {"thinking_budget": 16384}  # plan: "high"
    assert second.params["generationConfig"]["thinkingConfig"] == {"thinking_budget": 8192}
    assert second.params["generationConfig"]["temperature"] == 0.2
    # Gemini 3 takes a level, not a budget: Pro only low or high
    assert third.params["generationConfig"]["thinkingConfig"] == {"thinking_level": "HIGH"}
    assert fourth.params["generationConfig"]["thinkingConfig"] == {"thinking_level": "MEDIUM"}
    # thoughts are billed as output
    assert plan.usage.output_tokens > len("This is a scripted reply.") // 4 + 1


@pytest.mark.asyncio
async def test_bedrock_request_is_signed_cached_and_thinks_where_the_model_can(
    aws_credentials, make_settings, ask
):
    async with LLMTestServer(aws_credentials=aws_credentials) as server:
        settings = make_settings(server, max_tokens=400, reasoning={"plan": "high"})
        async with LLMClient(settings, PROVIDERS) as client:
            for model in (CLAUDE_ON_BEDROCK, NOVA, LLAMA):
                response = await client.complete(
                    ask(model, "dyn", static="ISA", system="sys", temperature=0.5)
                )
                assert response.ok, response.error
    claude, nova, llama = server.requests
    assert all(
        r.api_key == os.environ["AWS_ACCESS_KEY_ID"] for r in server.requests
    )  # signatures verified
    assert claude.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse"
    assert claude.system == "sys"
    assert claude.messages[0]["content"] == [
        {"text": "ISA"},
        {"cachePoint": {"type": "default"}},
        {"text": "dyn"},
    ]
    # Claude thinks with the plan's budget on top of the answer's limit, at its own temperature
    assert claude.params["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 16384}
    }
    assert claude.params["inferenceConfig"] == {"maxTokens": 400 + 16384}
    # Nova caches but does not think; Llama does neither
    assert {"cachePoint": {"type": "default"}} in nova.messages[0]["content"]
    assert nova.params["inferenceConfig"] == {"maxTokens": 400, "temperature": 0.5}
    assert "additionalModelRequestFields" not in nova.params
    assert [b for b in llama.messages[0]["content"] if "cachePoint" in b] == []


@pytest.mark.asyncio
@pytest.mark.parametrize("model", [GEMINI, CLAUDE_ON_BEDROCK, "anthropic::claude-sonnet-4-6"])
async def test_structured_edits_on_the_native_providers(model, api_keys, make_settings, ask):
    answer = {"plan": "unroll", "edits": [{"old_str": "i++", "new_str": "i += 2"}]}
    async with LLMTestServer(lambda r: json.dumps(answer)) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(model, response_format=ResponseFormat.EDITS))
    assert response.ok and parse_edits(response.text)[0].new_str == "i += 2"
    params = server.requests[0].params
    if model.startswith("gemini"):
        config = params["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"]["required"] == ["plan", "edits"]
    elif model.startswith("bedrock"):
        assert params["toolConfig"]["toolChoice"] == {"tool": {"name": "code_edits"}}
        # a forced tool and thinking do not go together: no thinking here
        assert "additionalModelRequestFields" not in params
    else:
        assert "thinking" not in params and params["tool_choice"]["name"] == "code_edits"


@pytest.mark.asyncio
async def test_reasoning_setting_per_phase_reaches_every_provider(api_keys, make_settings, ask):
    models = [
        "openai::gpt-5.4-mini",
        "anthropic::claude-sonnet-4-6",
        GEMINI,
        CLAUDE_ON_BEDROCK,
    ]
    async with LLMTestServer() as server:
        settings = make_settings(server, reasoning={"plan": "low", "code": "none"})
        assert (settings.plan_reasoning_effort, settings.code_reasoning_effort) == ("low", "none")
        async with LLMClient(settings, PROVIDERS) as client:
            for phase in ("plan", "code"):
                for model in models:
                    assert (await client.complete(ask(model, phase=phase))).ok
    plan = [r.params for r in server.requests[:4]]
    code = [r.params for r in server.requests[4:]]
    assert plan[0]["reasoning_effort"] == "low" and code[0]["reasoning_effort"] == "none"
    assert plan[1]["thinking"]["budget_tokens"] == 2048 and "thinking" not in code[1]
    assert plan[2]["generationConfig"]["thinkingConfig"] == {"thinking_budget": 2048}
    assert code[2]["generationConfig"]["thinkingConfig"] == {"thinking_budget": 0}
    assert plan[3]["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 2048
    assert "additionalModelRequestFields" not in code[3]


def test_reasoning_setting_refuses_an_unknown_effort():
    with pytest.raises(ValueError, match="'none', 'minimal', 'low', 'medium' or 'high'"):
        LLMSettings(reasoning={"plan": "maximal"})


# ---- failures --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_gemini_wrong_key_is_an_authentication_failure_not_retried(
    api_keys, make_settings, ask
):
    async with LLMTestServer(api_key="the-right-key-000000") as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(GEMINI))
    # Google answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID
    assert response.error.kind is ErrorKind.AUTHENTICATION and response.error.status == 400
    assert response.attempts == 1 and server.request_count == 1


@pytest.mark.asyncio
async def test_gemini_key_falls_back_to_google_api_key(monkeypatch, make_settings, ask):
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key-000000000000")
    async with LLMTestServer() as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            assert (await client.complete(ask(GEMINI))).ok
    assert server.requests[0].api_key == "google-key-000000000000"
    monkeypatch.delenv("GOOGLE_API_KEY")
    with pytest.raises(LLMConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        LLMClient(LLMSettings(), PROVIDERS).validate_models([GEMINI])


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "wrong, code",
    [("secret", "InvalidSignatureException"), ("key id", "UnrecognizedClientException")],
)
async def test_bedrock_wrong_credentials_are_an_authentication_failure(
    wrong, code, aws_credentials, make_settings, ask
):
    [(key_id, secret)] = aws_credentials.items()
    credentials = (
        {key_id: "another-secret-0000000000"}
        if wrong == "secret"
        else {"AKIAOTHERKEY00000001": secret}
    )
    async with LLMTestServer(aws_credentials=credentials) as server:
        async with LLMClient(make_settings(server), PROVIDERS) as client:
            response = await client.complete(ask(CLAUDE_ON_BEDROCK))
    assert response.error.kind is ErrorKind.AUTHENTICATION and response.error.status == 403
    assert response.error.message.startswith(code) and response.attempts == 1


@pytest.mark.asyncio
async def test_gemini_retry_delay_is_honoured(api_keys, make_settings, ask):
    plan = FaultPlan(force=lambda r: Fault.RATE_LIMIT if r.index == 0 else None, retry_after_s=1.0)
    async with LLMTestServer(faults=plan) as server:
        async with LLMClient(make_settings(server, backoff_max_s=0.01), PROVIDERS) as client:
            response = await client.complete(ask(GEMINI))
    assert response.ok and response.errors[0].kind is ErrorKind.RATE_LIMIT
    first, second = server.requests
    assert second.arrived_at - first.arrived_at >= 0.95  # RetryInfo's "1s", not the backoff


@pytest.mark.asyncio
async def test_models_check_says_what_each_native_model_does(
    aws_credentials, monkeypatch, make_settings
):
    def unknown(request):
        if request.model == "gemini-nope":
            return Reply(
                status=404,
                error_message="models/gemini-nope is not found for API version v1beta",
            )
        if request.model == "anthropic.nope-v1:0":
            return Reply(status=400, error_message="The provided model identifier is invalid.")
        return "OK"

    async with LLMTestServer(unknown, aws_credentials=aws_credentials) as server:
        rows = await check_models(
            make_settings(server),
            PROVIDERS,
            [
                GEMINI,
                "gemini::gemini-nope",
                CLAUDE_ON_BEDROCK,
                "bedrock::anthropic.nope-v1:0",
                "together::meta-llama/Llama-3.3-70B-Instruct-Turbo",
                "ollama::qwen2.5-coder:7b",
            ],
        )
        server.api_key = os.environ["GEMINI_API_KEY"]
        monkeypatch.setenv("GEMINI_API_KEY", "a-wrong-key-0000000000")
        wrong = await check_models(make_settings(server), PROVIDERS, [GEMINI])
    status = {row["model"]: row["status"] for row in rows}
    assert status == {
        GEMINI: "answers",
        "gemini::gemini-nope": "unknown model",
        CLAUDE_ON_BEDROCK: "answers",
        "bedrock::anthropic.nope-v1:0": "unknown model",
        "together::meta-llama/Llama-3.3-70B-Instruct-Turbo": "not usable",  # no TOGETHER key
        "ollama::qwen2.5-coder:7b": "answers",
    }
    assert wrong[0]["status"] == "wrong key"
    assert {row["key"] for row in rows if row["model"].startswith("bedrock")} == {
        "AWS configuration chain"
    }


@pytest.mark.parametrize(
    "model, module, extra",
    [(GEMINI, "google.genai", "gemini"), (CLAUDE_ON_BEDROCK, "botocore.session", "bedrock")],
)
def test_without_the_extra_one_line_names_it(model, module, extra, api_keys, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(LLMConfigError) as refused:
        LLMClient(LLMSettings(), PROVIDERS).validate_models([model])
    message = str(refused.value)
    assert "\n" not in message and f"pip install 'autocomp-core[{extra}]'" in message


def test_bedrock_without_region_or_credentials_says_so(monkeypatch):
    client = LLMClient(LLMSettings(), PROVIDERS)
    with pytest.raises(LLMConfigError, match="needs an AWS region: set AWS_REGION"):
        client.validate_models([CLAUDE_ON_BEDROCK])
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(LLMConfigError, match="no AWS credentials found"):
        client.validate_models([CLAUDE_ON_BEDROCK])


@pytest.mark.asyncio
async def test_gemini_key_never_reaches_errors_or_logs(make_settings, ask, monkeypatch, capsys):
    secret = "custom-gemini-token-42424242"  # not shaped like a known key
    monkeypatch.setenv("GEMINI_API_KEY", secret)

    def echo_key(request):  # a server that quotes the key back
        return Reply(status=400, error_message=f"API key {request.api_key} not valid")

    async with LLMTestServer(echo_key) as server:
        with capture_logs() as logs:
            async with LLMClient(make_settings(server), PROVIDERS) as client:
                response = await client.complete(ask(GEMINI))
        assert server.requests[0].api_key == secret
    assert not response.ok and "[REDACTED]" in response.error.message
    assert secret not in str(response.to_dict()) + str(client.usage.to_dict()) + str(logs)
    captured = capsys.readouterr()
    assert secret not in captured.out + captured.err


# ---- one iteration end to end, on each model string ------------------------------------

PLAN = "Use the generator rewrite."
FASTER = "def solution(xs):\n    return sum(x * x for x in xs)\n"


def toy_reply(request) -> str:
    if request.prompt.rstrip().endswith("Plan:"):
        return PLAN
    return f"Here is the program.\n```python\n{FASTER}```\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "model",
    [
        GEMINI,
        CLAUDE_ON_BEDROCK,
        "together::meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "ollama::qwen2.5-coder:7b",
    ],
)
async def test_one_iteration_run_end_to_end(
    model, aws_credentials, monkeypatch, make_settings, tmp_path
):
    monkeypatch.setenv("TOGETHER_API_KEY", TOGETHER_KEY)
    async with LLMTestServer(toy_reply, aws_credentials=aws_credentials) as server:
        base_urls = make_settings(server).base_urls
        summary = await optimize_async(
            {
                "backend": "toy",
                "problem": "sum_squares",
                "seed": 7,
                "run_dir": str(tmp_path / "run"),
                "models": {"plan": [model]},
                "search": {
                    "iterations": 1,
                    "beam_size": 1,
                    "plans_per_candidate": 1,
                    "codes_per_plan": 1,
                },
                "llm": {"max_retries": 1, "timeout_s": 30, "base_urls": base_urls},
                "budget": {"usd": 5.0} if not model.startswith("ollama") else {},
            }
        )
    assert summary.stop_reason == "completed"
    data = summary.data
    assert data["best_score"] < data["initial_score"]
    assert data["llm_calls"] == server.request_count == 2
    if not model.startswith("ollama"):  # self-hosted at 127.0.0.1: free
        assert data["cost_usd"] > 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert model in report
    everything = "".join(
        p.read_bytes().decode(errors="replace")
        for p in (tmp_path / "run").rglob("*")
        if p.is_file()
    )
    for secret in (os.environ["GEMINI_API_KEY"], os.environ["AWS_SECRET_ACCESS_KEY"], TOGETHER_KEY):
        assert secret not in everything
