"""Fixtures of the LLM layer's tests: keys isolated from the machine, a protocol server."""

from __future__ import annotations

import pytest
import pytest_asyncio

from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import LLMRequest, Prompt
from autocomp_core.testing import LLMTestServer

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"

_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
)


@pytest.fixture(autouse=True)
def isolated_keys(monkeypatch, tmp_path):
    """No real key or key file of the machine leaks into a test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def api_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


@pytest.fixture
def make_settings():
    """LLMSettings pointing every provider at a test server, with quick retries."""

    def make(server: LLMTestServer, **overrides) -> LLMSettings:
        values = dict(
            timeout_s=2.0,
            max_retries=6,
            backoff_base_s=0.01,
            backoff_max_s=0.05,
            base_urls={
                "openai": server.openai_base_url,
                "anthropic": server.base_url,
                "openai-compatible": server.openai_base_url,
            },
        )
        values.update(overrides)
        return LLMSettings(**values)

    return make


@pytest.fixture
def ask():
    """Build an LLMRequest with a short default prompt."""

    def build(
        model: str,
        dynamic: str = "Say hello.",
        *,
        static: str = "",
        system: str = "sys",
        phase: str = "plan",
        **kwargs,
    ) -> LLMRequest:
        return LLMRequest(
            model=model, prompt=Prompt(system, static, dynamic), phase=phase, **kwargs
        )

    return build


@pytest_asyncio.fixture
async def server():
    async with LLMTestServer() as srv:
        yield srv
