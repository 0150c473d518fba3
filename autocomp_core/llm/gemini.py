"""Google Gemini through its official async SDK (``google-genai``): ``gemini::MODEL``.

The key comes from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (environment or key file); the
base URL can be overridden (``[llm] base_urls.gemini``), which the tests use to reach their
server on 127.0.0.1. The system prompt and the static prompt part come first, as parts of their
own, so Gemini's implicit prefix caching can serve them again; the cached tokens it reports are
priced apart. The reasoning effort becomes a thinking budget (Gemini 2.5) or a thinking level
(Gemini 3).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import LLMConfigError
from .modelstring import ModelRef
from .parsing import EDITS_JSON_SCHEMA
from .providers import CallParams, ProviderContext, ProviderReply, ProviderSpec, thinking_budget
from .settings import LLMSettings
from .types import Prompt, ResponseFormat, Usage

if TYPE_CHECKING:
    from google.genai import Client

INSTALL_HINT = "pip install 'autocomp-core[gemini]'"


def require_sdk(ref: ModelRef, settings: LLMSettings) -> None:
    """One line naming the extra when the SDK is missing."""
    try:
        import google.genai  # noqa: F401
    except ImportError:
        raise LLMConfigError(
            f"{ref.provider}::{ref.model} needs the google-genai SDK: {INSTALL_HINT}"
        ) from None


def thinking_config(model: str, effort: str | None) -> dict | None:
    """Gemini 3 takes a thinking level (Pro only low or high, Flash minimal to high); earlier
    thinking models a budget (0: none)."""
    if effort is None:
        return None
    if re.search(r"gemini-[3-9]", model):
        if "-pro" in model:
            level = "high" if effort in ("medium", "high") else "low"
        else:
            level = {"none": "minimal"}.get(effort, effort)
        return {"thinking_level": level.upper()}
    budget = thinking_budget(effort)
    if budget == 0 and "-pro" in model:
        budget = 128  # 2.5 Pro always thinks: its least budget
    return None if budget is None else {"thinking_budget": budget}


class GeminiClient:
    def __init__(self, ctx: ProviderContext):
        from google import genai
        from google.genai import types

        # One attempt: LLMClient retries. Without retry_options the SDK would also retry a
        # dropped connection by itself after sleeping 1 to 10 s.
        options = types.HttpOptions(
            base_url=ctx.base_url,
            timeout=int(ctx.settings.timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client: Client = genai.Client(
            api_key=ctx.api_key, vertexai=False, http_options=options
        )

    async def prepare(self, model: str) -> None:
        return None

    def request_kwargs(self, model: str, prompt: Prompt, params: CallParams) -> dict:
        parts = [{"text": text} for text in (prompt.static, prompt.dynamic) if text]
        config: dict = {}
        if prompt.system:
            config["system_instruction"] = prompt.system
        if params.temperature is not None:
            config["temperature"] = params.temperature
        if params.max_tokens:
            config["max_output_tokens"] = params.max_tokens
        if params.seed is not None:
            config["seed"] = params.seed
        thinking = thinking_config(model, params.reasoning_effort)
        if thinking is not None:
            config["thinking_config"] = thinking
        if params.response_format is ResponseFormat.EDITS:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = EDITS_JSON_SCHEMA["schema"]
        for name in params.dropped:
            config.pop(
                {"max_tokens": "max_output_tokens", "thinking": "thinking_config"}.get(name, name),
                None,
            )
            if name == "response_format":
                config.pop("response_mime_type", None)
                config.pop("response_json_schema", None)
        return {
            "model": model,
            "contents": [{"role": "user", "parts": parts or [{"text": "."}]}],
            "config": config,
        }

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        from google.genai import types

        kwargs = self.request_kwargs(model, prompt, params)
        kwargs["config"] = types.GenerateContentConfig(**kwargs["config"])  # nested dicts typed
        response = await self._client.aio.models.generate_content(**kwargs)
        if not response.candidates:
            feedback = response.prompt_feedback
            reason = feedback.block_reason if feedback is not None else None
            raise ValueError(f"no candidates in the response (block reason: {reason})")
        candidate = response.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        text = "".join(p.text or "" for p in parts or [] if not p.thought)
        finish = candidate.finish_reason.value if candidate.finish_reason is not None else None
        meta = response.usage_metadata
        usage = Usage()
        if meta is not None:
            usage = Usage(
                input_tokens=meta.prompt_token_count or 0,  # cached tokens included
                # thoughts are billed as output
                output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
                cached_tokens=meta.cached_content_token_count or 0,
            )
        return ProviderReply(
            text=text, finish_reason=finish, usage=usage, truncated=finish == "MAX_TOKENS"
        )

    async def aclose(self) -> None:
        await self._client.aio.aclose()


GEMINI = ProviderSpec(
    name="gemini",
    key_env="GEMINI_API_KEY",
    key_env_fallbacks=("GOOGLE_API_KEY",),
    base_url_env="GEMINI_BASE_URL",
    endpoint_in_model_string=True,
    create=GeminiClient,
    validate=require_sdk,
    description="Google Gemini API (google-genai: thinking budgets, implicit caching)",
)
