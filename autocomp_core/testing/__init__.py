"""Helpers for testing autocomp and its plugins without paid APIs.

``LLMTestServer`` speaks the OpenAI and Anthropic wire protocols on 127.0.0.1 with
scripted replies, configurable latency and injected faults; ``Proposals`` scripts it as a
model that proposes named programs. ``check_backend`` checks that a backend keeps the
contract of ``autocomp_core.Backend``. ``preloaded_cli`` runs ``autocomp-core`` without paying
its imports on every command; ``optimize_args`` is the command line of a small scripted run.
"""

from .commands import optimize_args
from .contract import check_backend
from .llm_server import Fault, FaultPlan, LLMTestServer, Reply, ScriptedRequest, count_tokens
from .preloaded_cli import preloaded_cli
from .scripted import Proposals, fenced, is_planning, plan_of

__all__ = [
    "Fault",
    "FaultPlan",
    "LLMTestServer",
    "Proposals",
    "Reply",
    "ScriptedRequest",
    "check_backend",
    "count_tokens",
    "fenced",
    "is_planning",
    "optimize_args",
    "plan_of",
    "preloaded_cli",
]
