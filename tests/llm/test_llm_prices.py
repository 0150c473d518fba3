"""The price table: shipped TOML, user overrides, dated ids, unknown models."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, LLMConfigError
from autocomp_core.llm.prices import PriceBook, load_prices
from autocomp_core.llm.settings import LLMSettings

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()


def test_llm_shipped_prices_cover_real_models():
    table = load_prices()
    for provider, model in [
        ("openai", "gpt-5-mini"),
        ("openai", "gpt-5.4"),
        ("openai", "gpt-5.5"),
        ("anthropic", "claude-sonnet-4-6"),
        ("anthropic", "claude-opus-4-7"),
        ("gemini", "gemini-2.5-flash"),
        ("gemini", "gemini-2.5-pro"),
        ("bedrock", "anthropic.claude-sonnet-4-5"),
        ("bedrock", "amazon.nova-pro"),
    ]:
        entry = table[provider][model]
        assert entry["input"] > 0 and entry["output"] > entry["input"]
        assert entry["cached_input"] < entry["input"]


@pytest.mark.parametrize(
    "model, key",
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5"),
        # a geographic profile has a price of its own (10% more for the 4.5 models)
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-sonnet-4-5"),
        ("apac.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5"),
        ("amazon.nova-micro-v1:0", "amazon.nova-micro"),
    ],
)
def test_llm_bedrock_ids_find_their_price_without_version_and_region(model, key):
    sources: dict = {}
    book = PriceBook(load_prices(None, None, sources), sources)
    assert book.lookup("bedrock", model) == load_prices()["bedrock"][key]
    assert book.source("bedrock", model) == f"price_lists/bedrock.toml (bedrock.{key!r})"
    assert book.lookup("bedrock", "mistral.unknown-model-v1:0") is None


def test_llm_cost_arithmetic_and_dated_ids():
    book = PriceBook(load_prices())
    # 1M input of which 400k cached, 100k output, claude-sonnet-4-5: 3 in, 0.3 cached, 15 out
    cost = book.cost("anthropic", "claude-sonnet-4-5-20250929", 1_000_000, 100_000, 400_000)
    assert cost == pytest.approx(0.6 * 3 + 0.4 * 0.3 + 0.1 * 15)
    assert book.cost("openai", "gpt-5-mini-2025-08-07", 1_000_000, 0) == pytest.approx(0.25)
    assert book.cost("local", "smollm2", 10**6, 10**6) == 0


@pytest.mark.parametrize(
    "url, free",
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.1.2.3:8000/v1", True),
        ("http://192.168.0.7/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.together.xyz/v1", False),
        ("http://gpu-box.internal:8000/v1", False),  # a name is not resolved: remote
        ("http://8.8.8.8/v1", False),
        (None, False),
    ],
)
def test_llm_a_self_hosted_server_is_free_only_at_a_loopback_or_private_address(url, free):
    """Every OpenAI-compatible model was priced $0 by a wildcard, so a usd budget over a paid
    remote endpoint (Together, OpenRouter) never bound: now only self-hosted ones are free."""
    book = PriceBook(load_prices())
    found = book.lookup("openai-compatible", "meta-llama/Llama-3.1-8B", url, self_hosting=True)
    assert (found is not None) is free
    if free:
        assert (
            book.cost("openai-compatible", "m", 10**6, 10**6, base_url=url, self_hosting=True) == 0
        )
        assert book.source("openai-compatible", "m", url, self_hosting=True).startswith(
            "self-hosted at "
        )
    # a provider that does not self-host (the real OpenAI API behind a local proxy) is never free
    assert book.lookup("openai", "gpt-99", url, self_hosting=False) is None


def test_llm_remote_openai_compatible_models_have_no_price_until_given():
    client = LLMClient(LLMSettings(), PROVIDERS)
    remote = "openai-compatible@https://openrouter.ai/api/v1::qwen/qwen3-coder"
    assert client.missing_price(remote) == ("openai-compatible", "qwen/qwen3-coder")
    assert client.missing_price("openai-compatible@http://127.0.0.1:8000/v1::qwen") is None
    assert client.missing_price("ollama::qwen2.5-coder:7b") is None  # 127.0.0.1 by default
    assert client.missing_price("together::meta-llama/Llama-3.3-70B-Instruct-Turbo") is None
    assert client.missing_price("together::some/unlisted-model") == (
        "together",
        "some/unlisted-model",
    )
    priced = LLMClient(
        LLMSettings(
            prices={"openai-compatible": {"qwen/qwen3-coder": {"input": 0.3, "output": 1}}}
        ),
        PROVIDERS,
    )
    assert priced.missing_price(remote) is None
    assert priced.price_of(remote)["source"] == "[llm] prices"


def test_llm_each_price_says_where_it_came_from(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text('[openai."gpt-5-mini"]\noutput = 3.0\n')
    client = LLMClient(LLMSettings(prices_file=str(user)), PROVIDERS)
    mini = client.price_of("openai::gpt-5-mini")
    assert (mini["input"], mini["output"]) == (0.25, 3.0)
    assert mini["source"] == f"price_lists/openai.toml + {user}"
    dated = client.price_of("anthropic::claude-sonnet-4-5-20250929")
    assert dated["source"] == "price_lists/anthropic.toml (anthropic.'claude-sonnet-4-5')"
    assert client.price_of("openai::gpt-99")["source"] == "no price: a usd budget is refused"


def test_llm_unknown_model_costs_zero_with_one_warning():
    book = PriceBook(load_prices())
    with capture_logs() as logs:
        assert book.cost("openai", "gpt-99", 1000, 1000) == 0
        assert book.cost("openai", "gpt-99", 1000, 1000) == 0
    assert [e["event"] for e in logs] == ["llm.price_unknown"]


def test_llm_user_prices_override_and_extend(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text(
        '[openai."gpt-5-mini"]\noutput = 3.0\n'
        '[openai-compatible."meta-llama/Llama-3.1-8B:free"]\ninput = 0.1\noutput = 0.2\n'
    )
    client = LLMClient(LLMSettings(prices_file=str(user)), PROVIDERS)
    table = client.price_table()
    assert table["openai"]["gpt-5-mini"] == {"input": 0.25, "cached_input": 0.025, "output": 3.0}
    assert client.prices.cost(
        "openai-compatible", "meta-llama/Llama-3.1-8B:free", 10**6, 10**6
    ) == pytest.approx(0.3)


@pytest.mark.parametrize(
    "text, message",
    [
        ('[openai."x"]\ninput = -1\n', "must be a number"),
        ('[openai."x"]\nprice = 1\n', "not one of"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_llm_bad_user_prices_are_refused(tmp_path, text, message):
    user = tmp_path / "prices.toml"
    user.write_text(text)
    with pytest.raises(LLMConfigError, match=message):
        LLMClient(LLMSettings(prices_file=str(user)), PROVIDERS)
