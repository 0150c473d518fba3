"""An HTTP server on 127.0.0.1 that speaks the OpenAI, Anthropic, Gemini and Bedrock wire
protocols.

Tests and benchmarks point the real SDKs at it: replies are scripted by a ``responder``
that sees the full prompt text, latency is constant or drawn per request, and faults
(429 with Retry-After, 500, 529, a hang, a dropped connection, malformed JSON, empty
content, truncation) are injected at a seeded rate or forced per request.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models`` (OpenAI),
``POST /v1/messages`` (Anthropic), ``POST /v1beta/models/MODEL:generateContent`` (Gemini,
key in ``x-goog-api-key``) and ``POST /model/MODEL_ID/converse`` (Bedrock Converse: every
request must carry a well-formed SigV4 ``Authorization`` header, and with ``aws_credentials``
a right signature), non-streaming.

Usage is counted deterministically (``count_tokens``: one token per 4 characters).
Prompt caching is imitated: Anthropic blocks marked ``cache_control``, Bedrock
``cachePoint`` blocks, and OpenAI's and Gemini's automatic prefix caching report cached tokens
when a request repeats a prefix of at least ``cache_min_tokens`` tokens.
"""

from __future__ import annotations

# asyncio for the server thread only: aiohttp's server runs on an asyncio loop, and the
# loop lives in a daemon thread, so a test that forgets stop_thread cannot hang the
# interpreter's exit (anyio's blocking portal uses a thread the interpreter waits for).
import asyncio
import enum
import hashlib
import json
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web

from .sigv4 import Refusal, check_sigv4

CHARS_PER_TOKEN = 4
# OpenAI caches prompt prefixes in steps of 128 tokens.
OPENAI_CACHE_STEP_CHARS = 128 * CHARS_PER_TOKEN


def count_tokens(text: str) -> int:
    """The server's deterministic token count: one token per 4 characters, rounded up."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class Fault(str, enum.Enum):
    RATE_LIMIT = "rate_limit"  # 429 with a Retry-After header
    SERVER_ERROR = "server_error"  # 500
    OVERLOADED = "overloaded"  # 529
    HANG = "hang"  # no answer for FaultPlan.hang_s (past any sane client timeout)
    DROP = "drop"  # the connection is closed without a response
    MALFORMED_JSON = "malformed_json"  # 200 with a body that is not JSON
    EMPTY = "empty"  # 200 with empty content
    TRUNCATE = "truncate"  # reply cut short, finish_reason length / stop_reason max_tokens


@dataclass
class ScriptedRequest:
    """One request as the server saw it."""

    index: int
    path: str
    api: str  # "openai", "anthropic", "gemini" or "bedrock"
    model: str
    system: str
    messages: list[dict[str, Any]]
    prompt: str  # system text and every message's text, concatenated
    params: dict[str, Any]  # every other field of the request body
    api_key: str | None
    arrived_at: float  # time.monotonic() on arrival
    fault: Fault | None = None


@dataclass
class Reply:
    """A scripted answer. ``status`` set: an error response with ``error_message``."""

    text: str = ""
    finish_reason: str | None = None  # None: "stop" (OpenAI) / "end_turn" (Anthropic)
    status: int | None = None
    error_message: str = ""
    error_type: str | None = None
    param: str | None = None  # OpenAI error "param" field (e.g. "temperature")
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FaultPlan:
    """Which requests fail, and how.

    ``force(request)`` decides per request when given (return None for no fault);
    otherwise each request fails with probability ``rate``, its kind drawn from
    ``kinds``, both from the server's seeded RNG in arrival order.
    """

    rate: float = 0.0
    kinds: tuple[Fault, ...] = tuple(Fault)
    force: Callable[[ScriptedRequest], Fault | None] | None = None
    retry_after_s: float = 1.0
    hang_s: float = 3600.0

    def choose(self, request: ScriptedRequest, rng: random.Random) -> Fault | None:
        if self.force is not None:
            return self.force(request)
        if self.rate > 0 and rng.random() < self.rate:
            return rng.choice(self.kinds)
        return None


def _default_responder(request: ScriptedRequest) -> str:
    return "This is a scripted reply."


def _text_of(content: Any) -> str:
    """Text of a message content: a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class LLMTestServer:
    def __init__(
        self,
        responder: Callable[[ScriptedRequest], str | Reply] | None = None,
        *,
        latency: Callable[[ScriptedRequest], float] | float = 0,
        faults: FaultPlan | None = None,
        seed: int = 0,
        api_key: str | None = None,
        aws_credentials: dict[str, str] | None = None,
        cache_min_tokens: int = 1024,
    ):
        self.responder = responder or _default_responder
        self.latency = latency
        self.faults = faults or FaultPlan()
        self.api_key = api_key  # when set, other keys get 401
        # Bedrock: access key id -> secret key; when set, a wrong signature gets 403
        self.aws_credentials = aws_credentials
        self.cache_min_tokens = cache_min_tokens
        self.requests: list[ScriptedRequest] = []
        self._rng = random.Random(seed)
        self._cache_seen: set[str] = set()
        self._paused = False
        self._runner: web.AppRunner | None = None
        self._closing: anyio.Event | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("LLMTestServer is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def request_count(self) -> int:
        return len(self.requests)

    async def start(self) -> LLMTestServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai_chat)
        app.router.add_get("/v1/models", self._openai_models)
        app.router.add_post("/v1/messages", self._anthropic_messages)
        app.router.add_post("/{version}/models/{method}", self._gemini_generate)
        app.router.add_post("/model/{model_id:.+}/converse", self._bedrock_converse)
        self._closing = anyio.Event()
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=0.5,
        )
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._closing is not None:
            self._closing.set()  # releases hanging handlers
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> LLMTestServer:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def start_in_thread(self) -> LLMTestServer:
        """Serve from a daemon thread with its own event loop (for subprocess clients)."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=serve, name="llm-test-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return self

    def stop_thread(self) -> None:
        if self._thread is None or self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._thread = None

    def pause(self) -> None:
        """Hold every request that arrives from now on until :meth:`resume` (from any
        thread): lets a test see a client's state between steps, whatever the machine's speed."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    # ---- shared request handling -----------------------------------------------------

    async def _receive(self, request: web.Request, api: str) -> tuple[ScriptedRequest, dict]:
        body = await request.json()
        model = body.get("model", "")
        if api == "gemini":
            messages = body.get("contents", [])
            system = _gemini_text(body.get("systemInstruction"))
            prompt = "\n\n".join(
                [system, *map(_gemini_text, messages)] if system else map(_gemini_text, messages)
            )
            api_key = request.headers.get("x-goog-api-key")
            model = request.match_info["method"].partition(":")[0]
        elif api == "bedrock":
            messages = body.get("messages", [])
            system = _bedrock_text(body.get("system", []))
            prompt = "\n\n".join(
                [system] * bool(system) + [_bedrock_text(m.get("content", [])) for m in messages]
            )
            api_key = None  # SigV4 signs requests; the access key id is kept instead
            model = request.match_info["model_id"]
        elif api == "openai":
            messages = body.get("messages", [])
            system = "\n\n".join(
                _text_of(m.get("content"))
                for m in messages
                if m.get("role") in ("system", "developer")
            )
            prompt = "\n\n".join(_text_of(m.get("content")) for m in messages)
            api_key = request.headers.get("Authorization", "").removeprefix("Bearer ") or None
        else:
            messages = body.get("messages", [])
            system = _text_of(body.get("system", ""))
            parts = [system] if system else []
            prompt = "\n\n".join(parts + [_text_of(m.get("content")) for m in messages])
            # Anthropic SDKs send x-api-key (older) or a bearer token (newer).
            api_key = (
                request.headers.get("x-api-key")
                or request.headers.get("Authorization", "").removeprefix("Bearer ")
                or None
            )
        params = {
            k: v
            for k, v in body.items()
            if k not in ("model", "messages", "system", "contents", "systemInstruction")
        }
        scripted = ScriptedRequest(
            index=len(self.requests),
            path=request.path,
            api=api,
            model=model,
            system=system,
            messages=messages,
            prompt=prompt,
            params=params,
            api_key=api_key,
            arrived_at=time.monotonic(),
        )
        self.requests.append(scripted)
        scripted.fault = self.faults.choose(scripted, self._rng)
        return scripted, body

    async def _wait(self, seconds: float) -> None:
        """Sleep, cut short when the server stops."""
        if seconds <= 0:
            return
        assert self._closing is not None
        with anyio.move_on_after(seconds):
            await self._closing.wait()

    async def _prelude(
        self, request: web.Request, scripted: ScriptedRequest, api: str
    ) -> web.StreamResponse | None:
        """Latency, authentication and the transport-level faults. None: go on and answer."""
        assert self._closing is not None
        while self._paused and not self._closing.is_set():
            await self._wait(0.02)
        delay = self.latency(scripted) if callable(self.latency) else self.latency
        await self._wait(float(delay))
        if api == "bedrock":
            signer = check_sigv4(
                request.method,
                request.raw_path,
                request.headers,
                await request.read(),
                service="bedrock",
                secrets=self.aws_credentials,
            )
            if isinstance(signer, Refusal):
                return self._error(api, 403, signer.message, signer.code)
            scripted.api_key = signer
        elif self.api_key is not None and scripted.api_key != self.api_key:
            if api == "gemini":  # Google answers a wrong key with 400 and the reason
                return self._error(
                    api, 400, "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"
                )
            return self._error(api, 401, "Incorrect API key provided.", "authentication_error")
        fault = scripted.fault
        if fault is Fault.RATE_LIMIT:
            return self._error(
                api,
                429,
                "Rate limit reached for requests.",
                "rate_limit_error",
                headers={"Retry-After": f"{self.faults.retry_after_s:g}"},
            )
        if fault is Fault.SERVER_ERROR:
            return self._error(
                api, 500, "The server had an error while processing your request.", "api_error"
            )
        if fault is Fault.OVERLOADED:
            return self._error(api, 529, "Overloaded", "overloaded_error")
        if fault is Fault.HANG:
            await self._wait(self.faults.hang_s)
            return self._error(api, 504, "hung request released", "api_error")
        if fault is Fault.DROP:
            transport = request.transport
            if transport is not None:
                transport.abort()
            # Nothing can be written to an aborted transport; aiohttp drops this response.
            return web.Response(status=500)
        if fault is Fault.MALFORMED_JSON:
            return web.Response(
                status=200,
                body=b'{"id": "broken", "choices": [{"mess',
                content_type="application/json",
            )
        return None

    def _reply(self, scripted: ScriptedRequest) -> Reply:
        answer = self.responder(scripted)
        reply = Reply(text=answer) if isinstance(answer, str) else answer
        if scripted.fault is Fault.EMPTY:
            reply = Reply(text="")
        elif scripted.fault is Fault.TRUNCATE:
            reply = Reply(text=reply.text[: max(1, len(reply.text) // 2)], finish_reason="length")
        max_tokens = (
            scripted.params.get("max_completion_tokens")
            or scripted.params.get("max_tokens")
            or (scripted.params.get("generationConfig") or {}).get("maxOutputTokens")
            or (scripted.params.get("inferenceConfig") or {}).get("maxTokens")
        )
        if max_tokens and count_tokens(reply.text) > max_tokens and reply.status is None:
            reply = Reply(text=reply.text[: max_tokens * CHARS_PER_TOKEN], finish_reason="length")
        return reply

    def _error(
        self,
        api: str,
        status: int,
        message: str,
        error_type: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        body: dict[str, Any]
        if api == "gemini":
            return _gemini_error(status, message, error_type, self.faults.retry_after_s)
        if api == "bedrock":
            return _bedrock_error(status, message, error_type)
        if api == "openai":
            code = "unsupported_parameter" if param else None
            body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
        else:
            body = {"type": "error", "error": {"type": error_type, "message": message}}
        return web.json_response(body, status=status, headers=headers)

    def _scripted_error(self, api: str, reply: Reply) -> web.Response:
        default_type = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(reply.status or 0, "api_error")
        return self._error(
            api,
            reply.status or 500,
            reply.error_message or "scripted error",
            reply.error_type or default_type,
            reply.param,
            reply.headers,
        )

    def _cached_prefix_chars(self, key: str, prefixes: list[str]) -> int:
        """Length of the longest prefix seen before (and at least cache_min_tokens long)."""
        best = 0
        for prefix in prefixes:
            if count_tokens(prefix) < self.cache_min_tokens:
                continue
            digest = hashlib.sha256(f"{key}\0{prefix}".encode()).hexdigest()
            if digest in self._cache_seen:
                best = max(best, len(prefix))
            self._cache_seen.add(digest)
        return best

    # ---- OpenAI ----------------------------------------------------------------------

    async def _openai_models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": "test-model", "object": "model", "created": 0, "owned_by": "autocomp"}
                ],
            }
        )

    async def _openai_chat(self, request: web.Request) -> web.StreamResponse:
        scripted, _ = await self._receive(request, "openai")
        early = await self._prelude(request, scripted, "openai")
        if early is not None:
            return early
        reply = self._reply(scripted)
        if reply.status is not None:
            return self._scripted_error("openai", reply)
        # Automatic prefix caching, in 128-token steps of the concatenated prompt.
        full = scripted.prompt
        steps = [
            full[:n] for n in range(OPENAI_CACHE_STEP_CHARS, len(full) + 1, OPENAI_CACHE_STEP_CHARS)
        ]
        cached = count_tokens(full[: self._cached_prefix_chars("openai:" + scripted.model, steps)])
        prompt_tokens = count_tokens(full)
        completion_tokens = count_tokens(reply.text)
        return web.json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": scripted.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text, "refusal": None},
                        "finish_reason": reply.finish_reason or "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            },
            headers=reply.headers,
        )

    # ---- Anthropic -------------------------------------------------------------------

    async def _anthropic_messages(self, request: web.Request) -> web.StreamResponse:
        scripted, body = await self._receive(request, "anthropic")
        early = await self._prelude(request, scripted, "anthropic")
        if early is not None:
            return early
        if "max_tokens" not in body:
            return self._error(
                "anthropic", 400, "max_tokens: Field required", "invalid_request_error"
            )
        reply = self._reply(scripted)
        if reply.status is not None:
            return self._scripted_error("anthropic", reply)

        # Walk system then message blocks; every block with cache_control ends a cacheable prefix.
        blocks: list[dict] = []
        for source in (body.get("system", ""), *[m.get("content") for m in scripted.messages]):
            if isinstance(source, str):
                if source:
                    blocks.append({"text": source})
            elif isinstance(source, list):
                blocks.extend(b for b in source if isinstance(b, dict))
        text_so_far, breakpoints = "", []
        for block in blocks:
            text_so_far += block.get("text", "")
            if block.get("cache_control"):
                breakpoints.append(text_so_far)
        total = count_tokens(text_so_far)
        read_chars = self._cached_prefix_chars("anthropic:" + scripted.model, breakpoints)
        cache_read = count_tokens(text_so_far[:read_chars]) if read_chars else 0
        written = [
            p
            for p in breakpoints
            if count_tokens(p) >= self.cache_min_tokens and len(p) > read_chars
        ]
        cache_write = count_tokens(written[-1]) - cache_read if written else 0

        tool_choice = body.get("tool_choice") or {}
        stop_reason = {"length": "max_tokens"}.get(
            reply.finish_reason or "", reply.finish_reason or "end_turn"
        )
        if tool_choice.get("type") == "tool" and reply.text and stop_reason != "max_tokens":
            try:
                arguments = json.loads(reply.text)
            except ValueError:
                arguments = {"text": reply.text}
            if not isinstance(arguments, dict):
                arguments = {"value": arguments}
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:12]}",
                    "name": tool_choice.get("name", "tool"),
                    "input": arguments,
                }
            ]
            stop_reason = "tool_use"
        else:
            content = [{"type": "text", "text": reply.text}]
        return web.json_response(
            {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "type": "message",
                "role": "assistant",
                "model": scripted.model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": total - cache_read - cache_write,
                    "output_tokens": count_tokens(reply.text),
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                },
            },
            headers=reply.headers,
        )

    # ---- Gemini ----------------------------------------------------------------------

    async def _gemini_generate(self, request: web.Request) -> web.StreamResponse:
        if not request.match_info["method"].endswith(":generateContent"):
            return _gemini_error(404, f"{request.path} is not served here", "", 0)
        scripted, body = await self._receive(request, "gemini")
        early = await self._prelude(request, scripted, "gemini")
        if early is not None:
            return early
        reply = self._reply(scripted)
        if reply.status is not None:
            return self._scripted_error("gemini", reply)
        # Implicit caching: a repeated prefix ending at a part boundary is served from cache.
        texts = (
            [_gemini_text(body.get("systemInstruction"))] if body.get("systemInstruction") else []
        )
        texts += [p.get("text", "") for c in scripted.messages for p in c.get("parts", [])]
        prefixes = ["".join(texts[: i + 1]) for i in range(len(texts))]
        cached = self._cached_prefix_chars("gemini:" + scripted.model, prefixes)
        config = scripted.params.get("generationConfig") or {}
        thinking = config.get("thinkingConfig") or {}
        # proto3 JSON: either spelling of a field name; a few thoughts, billed as output
        budget = thinking.get("thinkingBudget", thinking.get("thinking_budget")) or 0
        thoughts = min(int(budget), 64)
        finish = {"length": "MAX_TOKENS", None: "STOP"}.get(
            reply.finish_reason, reply.finish_reason
        )
        prompt_tokens = count_tokens("".join(texts))
        usage = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": count_tokens(reply.text),
            "totalTokenCount": prompt_tokens + count_tokens(reply.text) + thoughts,
        }
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        if cached:
            usage["cachedContentTokenCount"] = count_tokens("".join(texts)[:cached])
        return web.json_response(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": reply.text}]},
                        "finishReason": finish,
                        "index": 0,
                    }
                ],
                "usageMetadata": usage,
                "modelVersion": scripted.model,
                "responseId": uuid.uuid4().hex[:16],
            },
            headers=reply.headers,
        )

    # ---- Bedrock Converse --------------------------------------------------------------

    async def _bedrock_converse(self, request: web.Request) -> web.StreamResponse:
        scripted, body = await self._receive(request, "bedrock")
        early = await self._prelude(request, scripted, "bedrock")
        if early is not None:
            return early
        reply = self._reply(scripted)
        if reply.status is not None:
            return self._scripted_error("bedrock", reply)
        # Every cachePoint block ends a cacheable prefix (system blocks, then message blocks).
        text_so_far, breakpoints = "", []
        for block in [
            *body.get("system", []),
            *[b for m in scripted.messages for b in m.get("content", [])],
        ]:
            if "cachePoint" in block:
                breakpoints.append(text_so_far)
            text_so_far += block.get("text", "")
        total = count_tokens(text_so_far)
        read_chars = self._cached_prefix_chars("bedrock:" + scripted.model, breakpoints)
        cache_read = count_tokens(text_so_far[:read_chars]) if read_chars else 0
        written = [
            p
            for p in breakpoints
            if count_tokens(p) >= self.cache_min_tokens and len(p) > read_chars
        ]
        cache_write = count_tokens(written[-1]) - cache_read if written else 0
        tool = ((body.get("toolConfig") or {}).get("toolChoice") or {}).get("tool")
        stop = {"length": "max_tokens", None: "end_turn"}.get(
            reply.finish_reason, reply.finish_reason
        )
        if tool and reply.text and stop != "max_tokens":
            try:
                arguments = json.loads(reply.text)
            except ValueError:
                arguments = {"text": reply.text}
            content: list[dict] = [
                {
                    "toolUse": {
                        "toolUseId": f"tooluse_{uuid.uuid4().hex[:12]}",
                        "name": tool["name"],
                        "input": arguments,
                    }
                }
            ]
            stop = "tool_use"
        else:
            content = [{"text": reply.text}]
        output_tokens = count_tokens(reply.text)
        return web.json_response(
            {
                "output": {"message": {"role": "assistant", "content": content}},
                "stopReason": stop,
                "usage": {
                    "inputTokens": total - cache_read - cache_write,
                    "outputTokens": output_tokens,
                    "totalTokens": total + output_tokens,
                    "cacheReadInputTokens": cache_read,
                    "cacheWriteInputTokens": cache_write,
                },
                "metrics": {"latencyMs": 1},
            },
            headers=reply.headers,
        )


# ---- Gemini (generateContent) and Bedrock (Converse) ------------------------------------

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# Bedrock's error codes by status (the x-amzn-ErrorType header botocore reads)
_AWS_CODES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
    504: "ModelTimeoutException",
}


def _gemini_text(content: Any) -> str:
    parts = content.get("parts", []) if isinstance(content, dict) else []
    return "\n\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def _bedrock_text(blocks: Any) -> str:
    return "\n\n".join(
        b["text"] for b in blocks or [] if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def _gemini_error(status: int, message: str, error_type: str, retry_after_s: float) -> web.Response:
    """Google's error body; an overloaded model is a 503, a wrong key a 400 with its reason."""
    if status == 529:
        status, message = 503, "The model is overloaded. Please try again later."
    details: list[dict] = []
    if error_type == "API_KEY_INVALID":
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            }
        )
    if status == 429:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{retry_after_s:g}s",
            }
        )
    error = {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}
    if details:
        error["details"] = details
    return web.json_response({"error": error}, status=status)


def _bedrock_error(status: int, message: str, error_type: str) -> web.Response:
    """Bedrock's error: the code in x-amzn-ErrorType, the message in the body."""
    if status == 529:  # Bedrock has no 529: a busy model is a 503
        status, error_type = 503, "ServiceUnavailableException"
    code = (
        error_type
        if error_type.endswith("Exception")
        else _AWS_CODES.get(status, "InternalServerException")
    )
    return web.json_response(
        {"message": message},
        status=status,
        headers={
            "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        },
    )
