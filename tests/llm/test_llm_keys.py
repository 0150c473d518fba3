"""API keys: environment, key file with private permissions, never in messages or logs."""

from __future__ import annotations

import os

import pytest
from structlog.testing import capture_logs

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, LLMConfigError, default_models
from autocomp_core.llm.keys import KeyStore, redact
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.testing import LLMTestServer, Reply

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()


def _write_keys(path, text, mode):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_llm_key_file_readable_by_others_is_refused(tmp_path, mode):
    path = _write_keys(tmp_path / "keys.toml", 'OPENAI_API_KEY = "sk-file-000000000000"\n', mode)
    with pytest.raises(LLMConfigError, match=f"chmod 600 {path}"):
        KeyStore(str(path))


def test_llm_key_file_private_is_used(tmp_path):
    path = _write_keys(
        tmp_path / "keys.toml", 'ANTHROPIC_API_KEY = "sk-ant-file-0000000000"\n', 0o600
    )
    store = KeyStore(str(path))
    assert store.get("ANTHROPIC_API_KEY") == "sk-ant-file-0000000000"
    assert store.source("ANTHROPIC_API_KEY") == "key file"
    assert store.get("OPENAI_API_KEY") is None
    client = LLMClient(LLMSettings(key_file=str(path)), PROVIDERS)
    client.validate_models(["anthropic::claude-haiku-4-5"])
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        client.validate_models(["openai::gpt-5.4-mini"])


def test_llm_default_key_file_location(isolated_keys, monkeypatch):
    _write_keys(
        isolated_keys / ".config/autocomp/keys.toml",
        'OPENAI_API_KEY = "sk-default-file-00000000"\n',
        0o600,
    )
    assert KeyStore().get("OPENAI_API_KEY") == "sk-default-file-00000000"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-wins-0000000000")
    assert KeyStore().get("OPENAI_API_KEY") == "sk-env-wins-0000000000"


def test_llm_default_key_file_follows_the_platform_config_dir(isolated_keys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    _write_keys(
        tmp_path / "xdg" / "autocomp" / "keys.toml",
        'OPENAI_API_KEY = "sk-xdg-file-000000000000"\n',
        0o600,
    )
    assert KeyStore().get("OPENAI_API_KEY") == "sk-xdg-file-000000000000"


def test_llm_missing_configured_key_file_is_an_error(tmp_path):
    with pytest.raises(LLMConfigError, match="does not exist"):
        KeyStore(str(tmp_path / "nope.toml"))


def test_llm_redact_known_and_key_shaped_strings():
    KeyStore()  # nothing loaded, shapes still caught
    text = "bad key sk-proj-AbCdEf0123456789 and sk-ant-api03-XYZxyz0123456789"
    assert "AbCdEf" not in redact(text) and "XYZxyz" not in redact(text)


@pytest.mark.asyncio
async def test_llm_keys_never_reach_errors_or_logs(make_settings, ask, monkeypatch, capsys):
    secret = "custom-secret-token-42424242"  # not shaped like a known key
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def echo_key(request):  # a server that quotes the key back, as some do
        return Reply(status=401, error_message=f"Incorrect API key provided: {request.api_key}")

    async with LLMTestServer(echo_key) as server:
        with capture_logs() as logs:
            async with LLMClient(make_settings(server), PROVIDERS) as client:
                response = await client.complete(ask("openai::gpt-4.1"))
        assert server.requests[0].api_key == secret  # it was sent...
    assert not response.ok and response.error.kind.value == "authentication"
    assert secret not in response.error.message and "[REDACTED]" in response.error.message
    assert secret not in str(response.to_dict()) and secret not in str(client.usage.to_dict())
    assert secret not in str(logs)
    captured = capsys.readouterr()
    assert secret not in captured.out + captured.err


def test_llm_default_models(monkeypatch):
    with capture_logs() as logs:
        assert default_models(LLMSettings()) == ["local::smollm2"]
    notice = [e for e in logs if e["event"] == "llm.using_embedded_model"]
    assert notice and "rarely finds speed-ups" in notice[0]["notice"]
    assert "OPENAI_API_KEY" in notice[0]["how_to_fix"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x-00000000000")
    assert default_models(LLMSettings()) == ["anthropic::claude-sonnet-4-6"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x-000000000000000")
    assert default_models(LLMSettings()) == ["openai::gpt-5.4-mini"]
