"""Model strings: provider::model, the endpoint form, aliases, and ids with / and :."""

from __future__ import annotations

import pytest

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, LLMConfigError
from autocomp_core.llm.modelstring import ModelRef, parse_model_string
from autocomp_core.llm.settings import LLMSettings

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("openai::gpt-5-mini", ModelRef("openai", "gpt-5-mini")),
        ("anthropic::claude-sonnet-4-6", ModelRef("anthropic", "claude-sonnet-4-6")),
        (
            "openai-compatible@http://127.0.0.1:8000/v1::meta-llama/Llama-3.1-8B:free",
            ModelRef(
                "openai-compatible", "meta-llama/Llama-3.1-8B:free", "http://127.0.0.1:8000/v1"
            ),
        ),
        (
            "vllm@http://gpu-box:8000/v1/::Qwen/Qwen2.5-Coder-32B-Instruct",
            ModelRef("vllm", "Qwen/Qwen2.5-Coder-32B-Instruct", "http://gpu-box:8000/v1"),
        ),
        (
            "vllm@http://[::1]:8000/v1::qwen2.5-coder:7b",
            ModelRef("vllm", "qwen2.5-coder:7b", "http://[::1]:8000/v1"),
        ),
        (
            "openai-compatible::openrouter/anthropic/claude-3.5:beta",
            ModelRef("openai-compatible", "openrouter/anthropic/claude-3.5:beta"),
        ),
        ("local::smollm2", ModelRef("local", "smollm2")),
        # bare names the original accepted
        ("gpt-5", ModelRef("openai", "gpt-5")),
        ("o4-mini", ModelRef("openai", "o4-mini")),
        ("claude-opus-4-5", ModelRef("anthropic", "claude-opus-4-5")),
    ],
)
def test_llm_parse_model_strings(text, expected):
    ref = parse_model_string(text)
    assert ref == expected
    assert parse_model_string(str(ref)) == ref  # the canonical form round-trips


def test_llm_aliases_resolve_in_chains_and_refuse_cycles():
    aliases = {"fast": "cheap", "cheap": "openai::gpt-5-nano", "a": "b", "b": "a"}
    assert parse_model_string("fast", aliases) == ModelRef("openai", "gpt-5-nano")
    with pytest.raises(LLMConfigError, match="cycle"):
        parse_model_string("a", aliases)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("mystery-model", "no provider"),
        ("openai::", "no model id"),
        ("vllm@127.0.0.1:8000::m", "must be a URL"),
        ("vllm@http://127.0.0.1:8000/v1", "provider@URL::model"),
        ("bad provider::x", "bad provider name"),
    ],
)
def test_llm_malformed_model_strings_are_refused(text, message):
    with pytest.raises(LLMConfigError, match=message):
        parse_model_string(text)


def test_llm_validate_models_names_the_problem(monkeypatch):
    client = LLMClient(LLMSettings(aliases={"mine": "openai::gpt-5"}), PROVIDERS)
    with pytest.raises(LLMConfigError, match="unknown provider 'nosuch'"):
        client.validate_models(["nosuch::model"])
    with pytest.raises(LLMConfigError, match=r"OPENAI_API_KEY"):
        client.validate_models(["mine"])
    with pytest.raises(LLMConfigError, match=r"configured aliases: mine"):
        client.validate_models(["unknown-alias"])
    with pytest.raises(LLMConfigError, match="takes no endpoint"):
        client.validate_models(["local@http://127.0.0.1:1/v1::smollm2"])
    # OpenAI-compatible servers need no key; the endpoint form and the vllm alias both work.
    client.validate_models(["vllm@http://127.0.0.1:9/v1::org/m:tag", "openai-compatible::x"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-000000000")
    client.validate_models(["mine"])


def test_llm_providers_come_from_the_plugin_hook():
    providers = build_registry().llm_providers()
    assert {"openai", "anthropic", "openai-compatible", "vllm", "local"} <= set(providers)
    assert providers["vllm"] is providers["openai-compatible"]


def test_llm_local_model_needs_llama_cpp(monkeypatch, tmp_path):
    import importlib.util

    from autocomp_core.llm import providers

    real = importlib.util.find_spec
    monkeypatch.setattr(
        providers.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    client = LLMClient(LLMSettings(), PROVIDERS)
    with pytest.raises(LLMConfigError, match=r"autocomp-core\[local\]"):
        client.validate_models(["local::smollm2"])
    with pytest.raises(LLMConfigError, match="does not exist"):
        client.validate_models([f"local::{tmp_path}/missing.gguf"])
    with pytest.raises(LLMConfigError, match="set local_model_path"):
        client.validate_models(["local::llama-70b"])


def test_llm_redacting_log_processor():
    from autocomp_core.llm.keys import REDACTED, redact_processor, remember_secret

    remember_secret("tok-9f8e7d6c5b4a")
    event = redact_processor(None, "info", {"event": "x", "detail": "used tok-9f8e7d6c5b4a"})
    assert event["detail"] == f"used {REDACTED}"
