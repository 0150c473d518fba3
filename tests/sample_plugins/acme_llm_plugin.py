"""An LLM provider plugin: ``acme@URL::model`` reaches an OpenAI-compatible server."""

from __future__ import annotations

from autocomp_core import hookimpl
from autocomp_core.llm.providers import OpenAIChatClient, ProviderSpec

ACME = ProviderSpec(
    name="acme",
    key_env=None,
    key_required=False,
    endpoint_in_model_string=True,
    create=lambda ctx: OpenAIChatClient(ctx, official=False),
    description="ACME's model gateway (test provider)",
)


@hookimpl
def autocomp_register_llm_providers() -> list[ProviderSpec]:
    return [ACME]
