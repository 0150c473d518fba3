"""The engine's only door to LLMs: ``LLMClient.complete`` with retries, limits and cost.

``complete`` never raises for API or network failures: a failed call is an
``LLMResponse`` whose ``error`` says why (with every failed attempt in ``errors``) and
whose text is empty, so no error message is ever taken for a plan or for code.
Cancellation propagates, and so does a bug (``errors.BUGS``: a ``TypeError`` in a
provider, ours or a plugin's), which no retry or later call could cure.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace

import anyio
import structlog

from .errors import BUGS, DROPPABLE_PARAMS, Classified, LLMConfigError, classify_exception
from .keys import KeyStore, key_file_path, redact
from .limits import Limits
from .modelstring import ModelRef, parse_model_string
from .prices import PRICE_FIELDS, PriceBook, load_prices
from .providers import CallParams, ProviderClient, ProviderContext, ProviderReply, ProviderSpec
from .settings import LLMSettings
from .types import ErrorKind, LLMError, LLMRequest, LLMResponse, Prompt, Usage
from .usage import UsageLedger

log = structlog.get_logger("autocomp.llm")

__all__ = ["LLMClient", "LLMConfigError", "check_models", "default_models"]

MAX_RETRY_AFTER_S = 900.0  # a server asking for a longer pause than this is not believed
ERROR_MESSAGE_LIMIT = 2000
PLAN_PHASES = {"plan", "menu"}  # phases that get plan_reasoning_effort; others code's


@dataclass
class _Tally:
    """What the attempts of one request have spent and met so far."""

    started: float  # time.monotonic() when the request came in
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    errors: list[LLMError] = field(default_factory=list)
    attempts: int = 0
    retries: int = 0
    learned: int = 0  # parameters learned as refused during this request


def _judge_reply(reply: ProviderReply, params: CallParams) -> Classified | None:
    """Why an answer that came back cannot be used (cut off, empty); None when it can."""
    if reply.truncated:
        return Classified(
            LLMError(
                ErrorKind.TRUNCATED,
                f"the answer stopped at the output limit "
                f"({params.max_tokens or 'provider default'} tokens)",
            )
        )
    if not reply.text.strip():
        return Classified(LLMError(ErrorKind.EMPTY, "the answer was empty"))
    return None


def _error_fields(request: LLMRequest, model: str, error: LLMError) -> dict:
    """The log fields every failed attempt reports."""
    return {
        "model": model,
        "phase": request.phase,
        "kind": error.kind.value,
        "status": error.status,
    }


class LLMClient:
    def __init__(self, settings: LLMSettings, providers: dict[str, ProviderSpec]):
        """``providers``: the run's registered LLM providers by model-string prefix
        (``PluginRegistry.llm_providers``)."""
        self.settings = settings
        self.providers: dict[str, ProviderSpec] = providers
        sources: dict = {}
        table = load_prices(settings.prices_file, settings.prices, sources)
        self.prices = PriceBook(table, sources)
        self.usage = UsageLedger()
        self._keys: KeyStore | None = None
        self._clients: dict[tuple[str, str | None], ProviderClient] = {}
        self._prepared: set[str] = set()
        self._validated: list[str] = []
        self._rejected: dict[str, set[str]] = {}  # model string -> parameters it refused
        self._limits: Limits | None = None
        self._jitter = random.Random()  # backoff jitter; never affects what the search does
        self._lock: anyio.Lock | None = None

    # ---- configuration -----------------------------------------------------------------

    @property
    def keys(self) -> KeyStore:
        if self._keys is None:
            self._keys = KeyStore(self.settings.key_file)
        return self._keys

    def resolve(self, model: str) -> tuple[ModelRef, ProviderSpec]:
        """The model reference and its provider spec; LLMConfigError when unknown."""
        try:
            ref = parse_model_string(model, self.settings.aliases)
        except LLMConfigError as exc:
            if "::" not in model and "@" not in model and self.settings.aliases:
                raise LLMConfigError(
                    f"{exc} (configured aliases: {', '.join(sorted(self.settings.aliases))})"
                ) from None
            raise
        spec = self.providers.get(ref.provider)
        if spec is None:
            known = ", ".join(sorted(self.providers)) or "none"
            raise LLMConfigError(
                f"model {model!r}: unknown provider {ref.provider!r} (known: {known})"
            )
        if ref.endpoint and not spec.endpoint_in_model_string:
            raise LLMConfigError(
                f"model {model!r}: provider {spec.name!r} takes no endpoint (it serves no base URL)"
            )
        return ref, spec

    def _api_key(self, ref: ModelRef, spec: ProviderSpec, model: str) -> str | None:
        if spec.key_env is None:
            return None
        key = next(filter(None, map(self.keys.get, spec.key_names)), None)
        if key is None and spec.key_required:
            raise LLMConfigError(
                f"model {model!r} needs an API key: set {' or '.join(spec.key_names)} in the "
                f"environment or in {key_file_path(self.settings.key_file)}; or, with no "
                f"key, run the same config on the embedded model: --model {DEFAULT_LOCAL_MODEL}"
            )
        return key

    def _base_url(self, ref: ModelRef, spec: ProviderSpec) -> str | None:
        import os

        urls = self.settings.base_urls
        return (
            ref.endpoint
            or urls.get(ref.provider)
            or urls.get(spec.name)
            or (os.environ.get(spec.base_url_env) if spec.base_url_env else None)
            or spec.default_base_url
        )

    def validate_models(self, models: list[str]) -> None:
        """Check every model string can be served; spends nothing. Raises LLMConfigError."""
        for model in models:
            ref, spec = self.resolve(model)
            self._api_key(ref, spec, model)
            if spec.validate is not None:
                spec.validate(ref, self.settings)
            if model not in self._validated:
                self._validated.append(model)

    def missing_price(self, model: str) -> tuple[str, str] | None:
        """(provider, model id) when ``model`` has no price, else None."""
        ref, spec = self.resolve(model)
        found = self.prices.lookup(
            spec.name, ref.model, self._base_url(ref, spec), spec.free_when_self_hosted
        )
        return None if found is not None else (spec.name, ref.model)

    def price_of(self, model: str) -> dict:
        """``model``'s prices per million tokens and where they came from (no network)."""
        ref, spec = self.resolve(model)
        where = (spec.name, ref.model, self._base_url(ref, spec), spec.free_when_self_hosted)
        entry = self.prices.lookup(*where)
        return {
            "model": model,
            "provider": spec.name,
            **{field: (entry or {}).get(field) for field in PRICE_FIELDS},
            "source": self.prices.source(*where) or "no price: a usd budget is refused",
        }

    def price_table(self) -> dict:
        """The merged price table in use (the engine snapshots it into the run)."""
        return self.prices.table

    # ---- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> LLMClient:
        try:
            for model in self._validated:
                await self._provider_client(model)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close SDK clients and stop local servers, even while being cancelled."""
        with anyio.CancelScope(shield=True):
            clients, self._clients = list(self._clients.values()), {}
            self._prepared.clear()
            for client in clients:
                try:
                    await client.aclose()
                except Exception as exc:  # closing one must not leak the others
                    log.warning("llm.close_failed", error=redact(str(exc)))

    async def _provider_client(self, model: str) -> tuple[ModelRef, ProviderSpec, ProviderClient]:
        ref, spec = self.resolve(model)
        base_url = self._base_url(ref, spec)
        slot = (spec.name, base_url)
        prepared = f"{spec.name}|{base_url}|{ref.model}"
        if prepared in self._prepared and slot in self._clients:
            return ref, spec, self._clients[slot]
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # one client (one local server) per provider and URL
            client = self._clients.get(slot)
            if client is None:
                if spec.validate is not None:
                    spec.validate(ref, self.settings)
                ctx = ProviderContext(
                    spec.name, base_url, self._api_key(ref, spec, model), self.settings
                )
                client = spec.create(ctx)
                self._clients[slot] = client
            if prepared not in self._prepared:
                await client.prepare(ref.model)
                self._prepared.add(prepared)
        return ref, spec, client

    # ---- one call ------------------------------------------------------------------------

    def _params(self, request: LLMRequest) -> CallParams:
        effort = request.reasoning_effort
        if effort is None:
            effort = (
                self.settings.plan_reasoning_effort
                if request.phase in PLAN_PHASES
                else self.settings.code_reasoning_effort
            )
        return CallParams(
            temperature=request.temperature,
            max_tokens=request.max_tokens or self.settings.max_tokens,
            reasoning_effort=effort,
            response_format=request.response_format,
            seed=request.sample,
        )

    def _backoff(self, retry: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter, never shorter than the server's Retry-After."""
        ceiling = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (retry - 1))
        delay = self._jitter.uniform(0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
        return delay

    @staticmethod
    def _estimate_tokens(prompt: Prompt, params: CallParams) -> int:
        chars = len(prompt.system) + len(prompt.static) + len(prompt.dynamic)
        return chars // 4 + (params.max_tokens or 0)

    def _failure(self, kind: ErrorKind, message: str, status: int | None = None) -> LLMError:
        return LLMError(kind, redact(message)[:ERROR_MESSAGE_LIMIT], status)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Ask until an answer is usable or the failure is final: each attempt runs under the
        limits; a refused parameter is dropped and asked again, a retryable failure backs off
        up to ``max_retries``; every response (success or not) is recorded in ``usage``."""
        tally = _Tally(time.monotonic())
        try:
            ref, spec, client = await self._provider_client(request.model)
        except Exception as exc:  # an unknown model, a local server that cannot start
            if isinstance(exc, BUGS):
                raise
            return self._unreachable(request, exc, tally)
        model = str(ref)
        params = self._params(request)
        while True:
            tally.attempts += 1
            dropped = frozenset(self._rejected.get(model, ()))
            reply, classified = await self._attempt(
                request, ref, spec, client, replace(params, dropped=dropped)
            )
            if reply is not None:
                # the reply's cache writes (a provider field) are recorded with its usage
                written = Usage(cache_write_tokens=reply.cache_write_tokens)
                tally.usage = tally.usage + reply.usage + written
                tally.cost += self._reply_cost(spec, ref, reply)
                classified = _judge_reply(reply, params)
                if classified is None:
                    return self._respond(request, model, tally, reply)
            assert classified is not None
            error = self._failure(
                classified.error.kind, classified.error.message, classified.error.status
            )
            tally.errors.append(error)
            if self._learn_refusal(model, classified.rejected_param, dropped, tally):
                continue
            if await self._pause_to_retry(request, model, error, classified.retry_after_s, tally):
                continue
            log.warning(
                "llm.failed",
                **_error_fields(request, model, error),
                attempts=tally.attempts,
                message=error.message[:200],
            )
            return self._respond(request, model, tally, reply, error)

    def _unreachable(self, request: LLMRequest, exc: Exception, tally: _Tally) -> LLMResponse:
        """The failed response when the model's provider client cannot be had at all."""
        kind = (
            ErrorKind.BAD_REQUEST
            if isinstance(exc, LLMConfigError)
            else classify_exception(exc).error.kind
        )
        error = self._failure(kind, str(exc) or type(exc).__name__)
        tally.errors.append(error)
        return self._respond(request, request.model, tally, None, error)

    def _call_limits(self) -> Limits:
        """The limits every call of this client shares, made at the first call."""
        if self._limits is None:
            s = self.settings
            # the embedded llama.cpp server answers one request at a time: queue here, where
            # waiting does not count against the request's timeout
            provider_limits = {"local": 1, **s.provider_concurrency}
            self._limits = Limits(
                s.max_concurrency,
                provider_limits,
                s.model_concurrency,
                s.requests_per_minute,
                s.tokens_per_minute,
                s.rate_burst_s,
            )
        return self._limits

    async def _attempt(
        self,
        request: LLMRequest,
        ref: ModelRef,
        spec: ProviderSpec,
        client: ProviderClient,
        params: CallParams,
    ) -> tuple[ProviderReply | None, Classified | None]:
        """One call under the limits and the per-request timeout: the reply, or why not."""
        names = (ref.provider, spec.name)
        estimate = self._estimate_tokens(request.prompt, params)
        reply: ProviderReply | None = None
        try:
            async with self._call_limits().slot(names, str(ref), estimate) as settle:
                with anyio.fail_after(self.settings.timeout_s):
                    reply = await client.complete(ref.model, request.prompt, params)
                settle(reply.usage.total)
        except BUGS:
            raise
        except Exception as exc:  # cancellation is not an Exception: it propagates
            classified = classify_exception(exc)
            if isinstance(exc, TimeoutError):  # our own per-request limit
                classified.error.message = f"no answer within {self.settings.timeout_s:g} s"
            return reply, classified
        return reply, None

    def _reply_cost(self, spec: ProviderSpec, ref: ModelRef, reply: ProviderReply) -> float:
        return self.prices.cost(
            spec.name,
            ref.model,
            reply.usage.input_tokens,
            reply.usage.output_tokens,
            reply.usage.cached_tokens,
            reply.cache_write_tokens,
            base_url=self._base_url(ref, spec),
            self_hosting=spec.free_when_self_hosted,
        )

    def _learn_refusal(
        self, model: str, param: str | None, dropped: frozenset[str], tally: _Tally
    ) -> bool:
        """True when the model refused a parameter it was sent: remember it, ask again without."""
        if not param or param in dropped or tally.learned >= len(DROPPABLE_PARAMS):
            return False
        self._rejected.setdefault(model, set()).add(param)
        tally.learned += 1
        log.info("llm.param_dropped", model=model, param=param)
        return True

    async def _pause_to_retry(
        self,
        request: LLMRequest,
        model: str,
        error: LLMError,
        retry_after: float | None,
        tally: _Tally,
    ) -> bool:
        """Sleep out the backoff and return True when the failure may be retried."""
        if not error.kind.retryable or tally.retries >= self.settings.max_retries:
            return False
        tally.retries += 1
        delay = self._backoff(tally.retries, retry_after)
        log.info(
            "llm.retry",
            **_error_fields(request, model, error),
            retry=tally.retries,
            delay_s=round(delay, 2),
        )
        await anyio.sleep(delay)
        return True

    def _respond(
        self,
        request: LLMRequest,
        model: str,
        tally: _Tally,
        reply: ProviderReply | None,
        error: LLMError | None = None,
    ) -> LLMResponse:
        """The request's response (the reply's text only when it succeeded), recorded."""
        response = LLMResponse(
            text=reply.text if reply is not None and error is None else "",
            model=model,
            usage=tally.usage,
            cost_usd=tally.cost,
            duration_s=time.monotonic() - tally.started,
            attempts=tally.attempts,
            finish_reason=reply.finish_reason if reply is not None else None,
            error=error,
            errors=tally.errors,
        )
        self.usage.record(request.phase, model, response)
        return response

    def rejected_params(self, model: str) -> set[str]:
        """Parameters learned as refused by ``model`` (resolved model string)."""
        return set(self._rejected.get(model, ()))


# ---- defaults and the `models` command ----------------------------------------------------

DEFAULT_OPENAI_MODEL = "openai::gpt-5.4-mini"
DEFAULT_ANTHROPIC_MODEL = "anthropic::claude-sonnet-4-6"
DEFAULT_LOCAL_MODEL = "local::smollm2"


def default_models(settings: LLMSettings) -> list[str]:
    """A real model when a key is configured, else the embedded tiny model (with a notice)."""
    keys = KeyStore(settings.key_file)
    if keys.get("OPENAI_API_KEY"):
        return [DEFAULT_OPENAI_MODEL]
    if keys.get("ANTHROPIC_API_KEY"):
        return [DEFAULT_ANTHROPIC_MODEL]
    log.warning(
        "llm.using_embedded_model",
        model=DEFAULT_LOCAL_MODEL,
        notice="no API key configured: using the embedded 135M-parameter model, which "
        "runs offline but rarely finds speed-ups",
        how_to_fix="set OPENAI_API_KEY or ANTHROPIC_API_KEY (environment or "
        f"{key_file_path(settings.key_file)}, chmod 600), or point a model "
        "at your own server: openai-compatible@http://HOST:PORT/v1::MODEL",
    )
    return [DEFAULT_LOCAL_MODEL]


def price_rows(
    settings: LLMSettings, providers: dict[str, ProviderSpec], models: list[str] | None = None
) -> list[dict]:
    """For ``autocomp-core models --prices``: per model, its prices per million tokens and
    where each came from. Asks no server."""
    if not models:
        models = list(dict.fromkeys([*default_models(settings), *settings.aliases]))
    client = LLMClient(settings, providers)
    rows = []
    for model in models:
        try:
            rows.append(client.price_of(model))
        except LLMConfigError as exc:
            rows.append({"model": model, "provider": None, "source": redact(str(exc))})
    return rows


async def check_models(
    settings: LLMSettings,
    providers: dict[str, ProviderSpec],
    models: list[str] | None = None,
    timeout_s: float = 30,
) -> list[dict]:
    """For ``autocomp-core models``: per model, its provider, whether a key is present and
    whether it answers one tiny request (no retries, short timeout)."""
    if not models:
        models = list(dict.fromkeys([*default_models(settings), *settings.aliases]))
    quick = settings.model_copy(
        update={"timeout_s": min(settings.timeout_s, timeout_s), "max_retries": 0}
    )
    client = LLMClient(quick, providers)
    rows = []
    async with client:
        for model in models:
            row: dict = {
                "model": model,
                "provider": None,
                "resolved": None,
                "key": None,
                "answers": False,
                "latency_s": None,
                "error": None,
                "status": None,
            }
            rows.append(row)
            try:
                ref, spec = client.resolve(model)
                row.update(provider=spec.name, resolved=str(ref))
                row["key"] = (
                    (spec.credentials_from or "not needed")
                    if spec.key_env is None
                    else next(filter(None, map(client.keys.source, spec.key_names)), None)
                    or ("missing" if spec.key_required else "not set (optional)")
                )
                client.validate_models([model])
            except LLMConfigError as exc:
                row["error"] = redact(str(exc))
                row["status"] = "not usable"
                continue
            response = await client.complete(
                LLMRequest(
                    model=model,
                    prompt=Prompt("", "", "Reply with the single word: OK"),
                    phase="check",
                    temperature=None,
                    max_tokens=16,
                    reasoning_effort="low",
                )
            )
            # A truncated or empty answer still proves the model is reachable.
            error = response.error
            row["answers"] = error is None or error.kind in (ErrorKind.TRUNCATED, ErrorKind.EMPTY)
            row["latency_s"] = round(response.duration_s, 3)
            if error is not None and not row["answers"]:
                row["error"] = f"{error.kind.value}: {error.message[:300]}"
                row["status"] = check_status(error)
            else:
                row["status"] = "answers"
    return rows


def check_status(error: LLMError) -> str:
    """What a failed check means to a user, in two words."""
    if error.kind is ErrorKind.AUTHENTICATION:
        return "wrong key"
    if error.status == 404 or (error.kind is ErrorKind.BAD_REQUEST and "model" in error.message):
        return "unknown model"
    if error.kind in (ErrorKind.CONNECTION, ErrorKind.TIMEOUT):
        return "unreachable"
    return error.kind.value.replace("_", " ")
