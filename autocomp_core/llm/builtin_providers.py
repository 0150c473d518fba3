"""The built-in LLM providers, registered through the same hook a third party uses."""

from __future__ import annotations

from ..hookspecs import hookimpl
from .providers import BUILTIN_PROVIDERS


@hookimpl
def autocomp_register_llm_providers() -> list:
    return list(BUILTIN_PROVIDERS)
