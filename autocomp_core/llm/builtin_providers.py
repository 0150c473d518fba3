"""The built-in LLM providers, registered through the same hook a third party uses."""

from __future__ import annotations

from ..hookspecs import hookimpl
from .bedrock import BEDROCK
from .gemini import GEMINI
from .providers import BUILTIN_PROVIDERS


@hookimpl
def autocomp_register_llm_providers() -> list:
    # Gemini and Bedrock import their SDKs only when a client is made (extras [gemini] and
    # [bedrock]); without one, validation says which extra to install.
    return [*BUILTIN_PROVIDERS, GEMINI, BEDROCK]
