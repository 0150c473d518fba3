"""The ``[llm]`` section of a run config."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: how hard a model may think before it answers; each provider maps it to its own knob
#: (OpenAI reasoning effort, Anthropic / Gemini / Bedrock thinking budgets); "none" asks for
#: no thinking where the model allows it
Effort = Literal["none", "minimal", "low", "medium", "high"]


class LLMSettings(BaseModel):
    """How the LLM layer talks to providers: timeouts, retries, limits, keys, prices."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(300, gt=0, description="per-request wall-clock limit")
    max_retries: int = Field(6, ge=0, description="retries of a retryable failure")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60, ge=0)
    max_concurrency: int = Field(16, ge=1, description="global in-flight LLM calls")
    provider_concurrency: dict[str, int] = {}  # provider prefix -> in-flight calls
    model_concurrency: dict[str, int] = {}  # model string -> in-flight calls
    requests_per_minute: dict[str, int] = {}  # provider prefix -> requests per minute
    tokens_per_minute: dict[str, int] = {}  # provider prefix -> input+output tokens per minute
    rate_burst_s: float = Field(
        10.0,
        gt=0,
        description="a per-minute limit allows bursts "
        "of this many seconds' worth of requests or tokens",
    )
    aliases: dict[str, str] = {}  # alias -> model string
    key_file: str | None = None  # default keys.toml in the user config dir (~/.config/autocomp)
    prices_file: str | None = None  # merged over the shipped price table
    #: inline prices, shaped like prices_file ({provider: {model: {input, output, ...}}}),
    #: merged over it: [llm.prices.openai."gpt-x"] input = 1.0, output = 4.0
    prices: dict[str, dict[str, dict[str, float]]] = {}
    base_urls: dict[str, str] = {}  # provider -> base URL override
    max_tokens: int | None = None
    plan_max_tokens: int | None = Field(None, ge=1, description="plans' limit (else max_tokens)")
    plan_reasoning_effort: str | None = "high"
    code_reasoning_effort: str | None = "medium"
    #: per phase, over the two settings above: reasoning = { plan = "high", code = "medium" }
    #: ("code" covers every phase but plans)
    reasoning: dict[Literal["plan", "code"], Effort] = {}
    local_model_path: str | None = None  # GGUF file for the embedded model
    local_startup_timeout_s: float = Field(120, gt=0)
    local_threads: int | None = None  # llama.cpp threads for prompts (default: all cores)
    # threads per generated token (default: 1 for a model file under 1 GB, else local_threads)
    local_generation_threads: int | None = Field(None, ge=1)
    local_context_tokens: int = Field(8192, ge=512)
    # more llama-cpp-python server options, after (and so over) autocomp's own, e.g.
    # ["--flash_attn", "true"]; `python -m llama_cpp.server --help` lists them
    local_server_args: list[str] = []

    @property
    def thinking_asked(self) -> bool:
        """Whether the config asks for reasoning itself (``reasoning`` or a phase's effort).
        Models that think only when asked (Claude) think then, never by default, so an
        unchanged config does not start paying for thinking tokens."""
        asked = {"reasoning", "plan_reasoning_effort", "code_reasoning_effort"}
        return bool(asked & self.model_fields_set)

    @model_validator(mode="after")
    def _reasoning_per_phase(self) -> LLMSettings:
        if "plan" in self.reasoning:
            self.plan_reasoning_effort = self.reasoning["plan"]
        if "code" in self.reasoning:
            self.code_reasoning_effort = self.reasoning["code"]
        return self
