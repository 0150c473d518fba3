"""Fixtures of the LLM layer's tests: keys isolated from the machine, a protocol server."""

from __future__ import annotations

import pytest
import pytest_asyncio

from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import LLMRequest, Prompt
from autocomp_core.testing import LLMTestServer

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"
GEMINI_KEY = "gemini-test-key-0123456789abcdef"
AWS_KEY_ID = "AKIATESTKEY000000001"
AWS_SECRET = "test/secret+key/0123456789abcdefghijklmn"

_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "TOGETHER_API_KEY",
    "OLLAMA_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
    "GEMINI_BASE_URL",
    "TOGETHER_BASE_URL",
    "OLLAMA_BASE_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
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
    # AWS: no config or credential file of the machine, no instance-metadata lookups
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return home


@pytest.fixture
def api_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")


@pytest.fixture
def aws_credentials(api_keys):
    """The test server's AWS keys (id -> secret), the ones api_keys puts in the environment."""
    return {AWS_KEY_ID: AWS_SECRET}


@pytest.fixture
def make_settings():
    """LLMSettings pointing every provider at a test server, with quick retries."""

    def make(server: LLMTestServer, **overrides) -> LLMSettings:
        values = dict(
            # generous: a loaded machine's first call (an SDK's connection setup) can take
            # seconds, and a timeout retried breaks the tests that count attempts; the tests
            # of timeouts set their own
            timeout_s=30.0,
            max_retries=6,
            backoff_base_s=0.01,
            backoff_max_s=0.05,
            base_urls={
                "openai": server.openai_base_url,
                "anthropic": server.base_url,
                "openai-compatible": server.openai_base_url,
                "together": server.openai_base_url,
                "ollama": server.openai_base_url,
                "gemini": server.base_url,
                "bedrock": server.base_url,
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
