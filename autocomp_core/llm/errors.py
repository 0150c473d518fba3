"""Errors of the LLM layer and the classification of provider failures."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from ..errors import ConfigError
from .types import ErrorKind, LLMError


class LLMConfigError(ConfigError):
    """A model string, key or setting that cannot work. One line naming what is wrong."""


#: What a bug raises (in our provider code, a plugin's, or an SDK we call wrongly): it
#: propagates, with its traceback, instead of becoming a failed response.
BUGS = (
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
    NameError,
    AssertionError,
    NotImplementedError,
    UnboundLocalError,
)

# Parameters a model may reject; the client learns them per model and drops them.
DROPPABLE_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "reasoning_effort",
    "reasoning",
    "thinking",
    "max_tokens",
    "max_completion_tokens",
    "response_format",
    "tool_choice",
    "tools",
)

_CONTEXT_WORDS = re.compile(
    r"context[ _-]?length|context window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|exceeds the (?:model's )?(?:maximum|context)",
    re.I,
)
_UNSUPPORTED_WORDS = re.compile(
    r"not supported|unsupported|deprecated|does not support|"
    r"not allowed|unrecognized|unknown (?:parameter|field)|"
    r"extra (?:inputs|fields) (?:are )?not permitted",
    re.I,
)


@dataclass
class Classified:
    error: LLMError
    retry_after_s: float | None = None
    rejected_param: str | None = None  # a parameter the model refused


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    aws = _aws_error(exc)
    if aws and aws.get("Message"):
        return f"{aws.get('Code', 'error')}: {aws['Message']}"
    message = getattr(exc, "message", None)  # google-genai's APIError
    if isinstance(message, str) and message and "APIError" in _names(exc):
        return message
    return str(exc) or type(exc).__name__


def _names(exc: Exception) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def _aws_error(exc: Exception) -> dict | None:
    """The ``Error`` part of a botocore ClientError's parsed response."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        return response["Error"]
    return None


def _status(exc: Exception) -> int | None:
    """The HTTP status of a failed call: OpenAI/Anthropic ``status_code``, google-genai
    ``code``, botocore's response metadata."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    code = getattr(exc, "code", None)
    if isinstance(code, int) and "APIError" in _names(exc):
        return code
    if _aws_error(exc) is not None:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")  # type: ignore[attr-defined]
        return status if isinstance(status, int) else None
    return None


def _google_retry_delay(exc: Exception) -> float | None:
    """Gemini's RetryInfo detail ({"retryDelay": "17s"}) of a 429."""
    details = getattr(exc, "details", None)
    inner = details.get("error", details) if isinstance(details, dict) else None
    for item in (inner or {}).get("details", []) if isinstance(inner, dict) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            return parse_retry_after(delay[:-1])
    return None


def _rejected_param(exc: Exception, message: str) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        param = inner.get("param") if isinstance(inner, dict) else None
        if param in DROPPABLE_PARAMS:
            return param
    if not _UNSUPPORTED_WORDS.search(message):
        return None
    # The earliest mention wins: "Unsupported parameter: 'max_tokens' ... use 'max_completion_tokens'".
    found = [
        (m.start(), name)
        for name in DROPPABLE_PARAMS
        for m in [re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)]
        if m
    ]
    return min(found)[1] if found else None


def classify_status(status: int, message: str) -> ErrorKind:
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 529 or (status == 503 and "overload" in message.lower()):
        return ErrorKind.OVERLOADED
    if status in (401, 403):
        return ErrorKind.AUTHENTICATION
    if status == 408:
        return ErrorKind.TIMEOUT
    if status in (400, 404, 413, 422):
        return ErrorKind.CONTEXT_LENGTH if _CONTEXT_WORDS.search(message) else ErrorKind.BAD_REQUEST
    if status >= 500:
        return ErrorKind.SERVER
    return ErrorKind.BAD_REQUEST


def classify_exception(exc: Exception) -> Classified:
    """Map any failure of an SDK call (OpenAI, Anthropic, google-genai, botocore, or a
    transport error) to a kind."""
    name_chain = _names(exc)
    message = _error_message(exc)
    status = _status(exc)
    if isinstance(status, int):
        kind = classify_status(status, message)
        if "API_KEY_INVALID" in str(getattr(exc, "details", "")):  # Google: a wrong key is a 400
            kind = ErrorKind.AUTHENTICATION
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is None and headers.get("retry-after-ms"):
            retry_after = parse_retry_after(headers.get("retry-after-ms"))
            retry_after = retry_after / 1000 if retry_after is not None else None
        if retry_after is None:
            retry_after = _google_retry_delay(exc)
        rejected = _rejected_param(exc, message) if kind is ErrorKind.BAD_REQUEST else None
        return Classified(LLMError(kind, message, status), retry_after, rejected)
    if (
        isinstance(exc, TimeoutError)
        or "APITimeoutError" in name_chain
        or {"ReadTimeoutError", "ConnectTimeoutError"} & set(name_chain)  # botocore
    ):
        return Classified(LLMError(ErrorKind.TIMEOUT, message or "request timed out"))
    if {"NoCredentialsError", "PartialCredentialsError"} & set(name_chain):  # botocore
        return Classified(LLMError(ErrorKind.AUTHENTICATION, message))
    if (
        "APIConnectionError" in name_chain
        or "ClientConnectionError" in name_chain  # aiohttp (google-genai's transport)
        or "HTTPClientError" in name_chain  # botocore: connection closed, endpoint unreachable
        or isinstance(exc, (ConnectionError, OSError))
    ):
        return Classified(LLMError(ErrorKind.CONNECTION, message))
    if "ParamValidationError" in name_chain:  # botocore refused the request before sending
        return Classified(LLMError(ErrorKind.BAD_REQUEST, message))
    if isinstance(exc, json.JSONDecodeError) or "APIResponseValidationError" in name_chain:
        return Classified(LLMError(ErrorKind.SERVER, f"malformed response: {message}"))
    if isinstance(exc, LLMConfigError):
        return Classified(LLMError(ErrorKind.BAD_REQUEST, message))
    return Classified(LLMError(ErrorKind.SERVER, f"{type(exc).__name__}: {message}"))
