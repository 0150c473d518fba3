"""structlog set-up: readable lines on a terminal, JSON lines with ``--log-json``."""

from __future__ import annotations

import logging
import sys

import structlog

from .llm.keys import redact_processor

_json_lines = False


def json_lines_enabled() -> bool:
    """Whether stderr carries JSON log lines only (``--log-json``): nothing else is drawn."""
    return _json_lines


def _stderr_logger(*args: object) -> structlog.PrintLogger:
    # sys.stderr looked up per call: a live progress panel redirects it to print above itself
    return structlog.PrintLogger(file=sys.stderr)


def configure(json_lines: bool = False, verbose: bool = False) -> None:
    global _json_lines
    _json_lines = json_lines
    level = logging.DEBUG if verbose else logging.INFO
    renderer = (
        structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    for noisy in ("httpx", "openai", "anthropic", "aiohttp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
