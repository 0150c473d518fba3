"""The price table: shipped ``prices.toml`` merged with the user's file; cost of a call."""

from __future__ import annotations

import copy
import os
import re
import tomllib
from importlib import resources
from pathlib import Path

import structlog

from .errors import LLMConfigError

log = structlog.get_logger("autocomp.llm")

PRICE_FIELDS = ("input", "output", "cached_input", "cache_write")
_DATED = re.compile(r"-(?:\d{4}-?\d{2}-?\d{2}|latest)$")


def shipped_prices() -> dict:
    text = resources.files("autocomp_core.llm").joinpath("prices.toml").read_text()
    return tomllib.loads(text)


def _check(table: dict, source: str) -> None:
    for provider, models in table.items():
        if not isinstance(models, dict):
            raise LLMConfigError(f"{source}: [{provider}] must be a table of models")
        for model, entry in models.items():
            if not isinstance(entry, dict):
                raise LLMConfigError(f"{source}: {provider}.{model} must be a table")
            for field, value in entry.items():
                if field not in PRICE_FIELDS:
                    raise LLMConfigError(
                        f"{source}: {provider}.{model}.{field} is not one of "
                        f"{', '.join(PRICE_FIELDS)}"
                    )
                if not isinstance(value, (int, float)) or value < 0:
                    raise LLMConfigError(
                        f"{source}: {provider}.{model}.{field} must be a number >= 0"
                    )


def load_prices(user_file: str | None = None, inline: dict | None = None) -> dict:
    """The shipped table, then the user's file, then inline prices (``[llm] prices``),
    each merged over the last model by model."""
    table = shipped_prices()
    _check(table, "prices.toml")
    layers = []
    if user_file:
        path = Path(os.path.expanduser(user_file))
        try:
            user = tomllib.loads(path.read_text())
        except OSError as exc:
            raise LLMConfigError(f"prices_file {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise LLMConfigError(f"prices_file {path} is not valid TOML: {exc}") from None
        layers.append((user, str(path)))
    if inline:
        layers.append((inline, "[llm] prices"))
    for layer, source in layers:
        _check(layer, source)
        for provider, models in layer.items():
            for model, entry in models.items():
                table.setdefault(provider, {}).setdefault(model, {}).update(entry)
    return table


class PriceBook:
    def __init__(self, table: dict):
        self.table = copy.deepcopy(table)
        self._warned: set[str] = set()

    def lookup(self, provider: str, model: str) -> dict | None:
        models = self.table.get(provider, {})
        if model in models:
            return models[model]
        undated = _DATED.sub("", model)
        if undated in models:
            return models[undated]
        return models.get("*")

    def cost(
        self,
        provider: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """USD for one call. Input tokens include cached and cache-written ones."""
        entry = self.lookup(provider, model)
        if entry is None:
            name = f"{provider}::{model}"
            if name not in self._warned:
                self._warned.add(name)
                log.warning(
                    "llm.price_unknown",
                    model=name,
                    hint="cost counted as 0; add it to prices_file in [llm]",
                )
            return 0.0
        price_in = entry.get("input", 0.0)
        cached_price = entry.get("cached_input", price_in)
        write_price = entry.get("cache_write", price_in)
        plain = max(0, input_tokens - cached_tokens - cache_write_tokens)
        return (
            plain * price_in
            + cached_tokens * cached_price
            + cache_write_tokens * write_price
            + output_tokens * entry.get("output", 0.0)
        ) / 1e6
