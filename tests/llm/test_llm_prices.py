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
    ]:
        entry = table[provider][model]
        assert entry["input"] > 0 and entry["output"] > entry["input"]
        assert entry["cached_input"] < entry["input"]


def test_llm_cost_arithmetic_and_dated_ids():
    book = PriceBook(load_prices())
    # 1M input of which 400k cached, 100k output, claude-sonnet-4-5: 3 in, 0.3 cached, 15 out
    cost = book.cost("anthropic", "claude-sonnet-4-5-20250929", 1_000_000, 100_000, 400_000)
    assert cost == pytest.approx(0.6 * 3 + 0.4 * 0.3 + 0.1 * 15)
    assert book.cost("openai", "gpt-5-mini-2025-08-07", 1_000_000, 0) == pytest.approx(0.25)
    assert book.cost("local", "smollm2", 10**6, 10**6) == 0
    assert book.cost("openai-compatible", "meta-llama/Llama-3.1-8B", 10**6, 10**6) == 0


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
