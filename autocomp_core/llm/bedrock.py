"""Amazon Bedrock's Converse API through the AWS SDK (botocore): ``bedrock::MODEL_ID``.

Region, profile and credentials come from the standard AWS configuration chain (``AWS_REGION``,
``AWS_PROFILE``, ``~/.aws/config``, SSO, an instance role, or a Bedrock API key in
``AWS_BEARER_TOKEN_BEDROCK``); autocomp keeps no AWS key of its own. ``[llm] base_urls.bedrock``
(or ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``) points it at another endpoint, as the tests do.

Why botocore in a worker thread rather than aioboto3: aiobotocore pins a narrow range of
botocore versions, so it fights every other AWS tool installed beside it (the Neuron SDK on a
Trainium host among them), and it lags new Bedrock features; a Converse call is one blocking
HTTPS request of seconds to minutes, for which a thread costs nothing worth saving. The SDK's
own read timeout equals the request timeout, so an abandoned thread ends with the request.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any

import anyio

from .errors import LLMConfigError
from .modelstring import ModelRef
from .parsing import EDITS_JSON_SCHEMA
from .providers import (
    EDIT_TOOL_DESCRIPTION,
    CallParams,
    ProviderContext,
    ProviderReply,
    ProviderSpec,
    thinking_budget,
)
from .settings import LLMSettings
from .types import Prompt, ResponseFormat, Usage

INSTALL_HINT = "pip install 'autocomp-core[bedrock]'"
SERVICE = "bedrock-runtime"
DEFAULT_MAX_TOKENS = 8192

# Models that take cache points (Bedrock prompt caching) and Claude's extended thinking.
_CACHING = re.compile(
    r"anthropic\.claude-(?:3-7|3-5-haiku|(?:opus|sonnet|haiku)-[4-9])|amazon\.nova"
)
_THINKING = re.compile(r"anthropic\.claude-(?:3-7-sonnet|(?:opus|sonnet|haiku)-[4-9])")


def aws_region(session: Any) -> str | None:
    """The chain's region; botocore reads AWS_DEFAULT_REGION and the config file, the other
    AWS SDKs and the CLI also AWS_REGION."""
    return session.get_config_variable("region") or os.environ.get("AWS_REGION") or None


def check_setup(ref: ModelRef, settings: LLMSettings) -> None:
    """The SDK, a region and credentials from the AWS chain; one line naming what is missing."""
    name = f"{ref.provider}::{ref.model}"
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise LLMConfigError(f"{name} needs the AWS SDK (botocore): {INSTALL_HINT}") from None
    try:
        session = botocore.session.Session()
        if not aws_region(session):
            raise LLMConfigError(
                f"{name} needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or "
                "region in ~/.aws/config for your profile (AWS_PROFILE)"
            )
        if not os.environ.get("AWS_BEARER_TOKEN_BEDROCK") and session.get_credentials() is None:
            raise LLMConfigError(
                f"{name}: no AWS credentials found in the standard chain (environment, "
                "AWS_PROFILE and ~/.aws, SSO, instance role) nor AWS_BEARER_TOKEN_BEDROCK"
            )
    except botocore.exceptions.BotoCoreError as exc:  # a broken profile or config file
        raise LLMConfigError(f"{name}: AWS configuration: {exc}") from None


def _thinking(model: str, params: CallParams) -> int | None:
    """Claude's thinking budget for this call (never with the edits tool forced)."""
    budget = thinking_budget(params.reasoning_effort)
    if not budget or not _THINKING.search(model) or "thinking" in params.dropped:
        return None
    return None if params.response_format is ResponseFormat.EDITS else budget


class BedrockClient:
    def __init__(self, ctx: ProviderContext):
        import botocore.session
        from botocore.config import Config

        timeout = ctx.settings.timeout_s
        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"},  # LLMClient retries
            read_timeout=timeout,
            connect_timeout=min(timeout, 30),
            max_pool_connections=ctx.settings.max_concurrency,
        )
        self._think = ctx.settings.thinking_asked  # Claude thinks only when the config asks
        session = botocore.session.Session()
        self._client: Any = session.create_client(
            SERVICE, region_name=aws_region(session), endpoint_url=ctx.base_url, config=config
        )

    async def prepare(self, model: str) -> None:
        return None

    def request_kwargs(self, model: str, prompt: Prompt, params: CallParams) -> dict:
        content: list[dict] = []
        if prompt.static:
            content.append({"text": prompt.static})
            if _CACHING.search(model):
                content.append({"cachePoint": {"type": "default"}})
        content.append({"text": prompt.dynamic or "."})
        inference: dict = {"maxTokens": params.max_tokens or DEFAULT_MAX_TOKENS}
        kwargs: dict = {
            "modelId": model,
            "messages": [{"role": "user", "content": content}],
            "inferenceConfig": inference,
        }
        if prompt.system:
            kwargs["system"] = [{"text": prompt.system}]
        budget = _thinking(model, params) if self._think else None
        if budget:
            # maxTokens counts thinking too; Claude thinks only at its default temperature
            inference["maxTokens"] += budget
            kwargs["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": budget}
            }
        elif params.temperature is not None and "temperature" not in params.dropped:
            inference["temperature"] = params.temperature
        if params.response_format is ResponseFormat.EDITS and "tools" not in params.dropped:
            name = EDITS_JSON_SCHEMA["name"]
            kwargs["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": name,
                            "description": EDIT_TOOL_DESCRIPTION,
                            "inputSchema": {"json": EDITS_JSON_SCHEMA["schema"]},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": name}},
            }
        return kwargs

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        call = functools.partial(
            self._client.converse, **self.request_kwargs(model, prompt, params)
        )
        response = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        if "output" not in response:  # botocore parses a body that is not JSON as {}
            raise ValueError("malformed response: no output message")
        blocks = response["output"].get("message", {}).get("content") or []
        tool_input = next((b["toolUse"].get("input") for b in blocks if "toolUse" in b), None)
        text = (
            json.dumps(tool_input, ensure_ascii=False)
            if tool_input is not None
            else "".join(b.get("text", "") for b in blocks)
        )
        u = response.get("usage") or {}
        read = u.get("cacheReadInputTokens") or 0
        written = u.get("cacheWriteInputTokens") or 0
        stop = response.get("stopReason")
        return ProviderReply(
            text=text,
            finish_reason=stop,
            # inputTokens counts neither cache reads nor writes
            usage=Usage(
                input_tokens=(u.get("inputTokens") or 0) + read + written,
                output_tokens=u.get("outputTokens") or 0,
                cached_tokens=read,
            ),
            cache_write_tokens=written,
            truncated=stop == "max_tokens",
        )

    async def aclose(self) -> None:
        self._client.close()


BEDROCK = ProviderSpec(
    name="bedrock",
    key_env=None,  # the AWS configuration chain, not a key of ours
    key_required=False,
    credentials_from="AWS configuration chain",
    endpoint_in_model_string=True,
    create=BedrockClient,
    validate=check_setup,
    description="Amazon Bedrock Converse API (AWS credential chain, cache points, thinking)",
)
