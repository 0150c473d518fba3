"""An LLM provider with a bug: ``buggy::model`` raises a ``TypeError`` on every call."""

from __future__ import annotations

from autocomp_core import hookimpl
from autocomp_core.llm.providers import ProviderSpec


class BuggyClient:
    async def prepare(self, model: str) -> None:
        return None

    async def complete(self, model, prompt, params):
        return len(params)  # TypeError: CallParams has no len(): a bug, not a failed request

    async def aclose(self) -> None:
        return None


BUGGY = ProviderSpec(
    name="buggy",
    key_env=None,
    key_required=False,
    create=lambda ctx: BuggyClient(),
    description="a provider with a bug",
)


@hookimpl
def autocomp_register_llm_providers() -> list[ProviderSpec]:
    return [BUGGY]
