"""The price table: one shipped file per provider family (``price_lists/*.toml``), merged with
the user's file and inline prices; where each price came from; the cost of a call.

A self-hosted server costs nothing only where the engine can see it is self-hosted: a provider
marked ``free_when_self_hosted`` at a loopback or private IP address (or ``localhost``). Any
other endpoint without a price has none, so a usd budget over it is refused up front.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import re
import tomllib
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

import structlog

from .errors import LLMConfigError

log = structlog.get_logger("autocomp.llm")

PRICE_FIELDS = ("input", "output", "cached_input", "cache_write")
_DATED = re.compile(r"-(?:\d{4}-?\d{2}-?\d{2}|latest)$")
#: a Bedrock model id's cross-region prefix and version suffix
#: (us.anthropic.claude-sonnet-4-5-20250929-v1:0 -> anthropic.claude-sonnet-4-5)
_BEDROCK_GEO = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca)\.(?=\w+\.)")
_BEDROCK_VERSION = re.compile(r"(?:-\d{8})?-v\d+(?::\d+)?$")
#: the price of a model served from a loopback or private address by a self-hosting provider
SELF_HOSTED = {"input": 0.0, "output": 0.0}


def shipped_layers() -> list[tuple[dict, str]]:
    """Each shipped price list with its name (``price_lists/openai.toml``), in name order."""
    folder = resources.files("autocomp_core.llm").joinpath("price_lists")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)
    return [(tomllib.loads(f.read_text()), f"price_lists/{f.name}") for f in files]


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


def _layers(user_file: str | None, inline: dict | None) -> list[tuple[dict, str]]:
    """The shipped lists, then the user's file, then inline prices, each checked."""
    layers = shipped_layers()
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
    return layers


def load_prices(
    user_file: str | None = None, inline: dict | None = None, sources: dict | None = None
) -> dict:
    """The merged table ``{provider: {model: {field: usd per million}}}``, each layer merged
    over the last model by model. ``sources``, when given, is filled with
    ``{provider: {model: "where the price came from"}}`` (the layers that set it, in order)."""
    table: dict = {}
    for layer, source in _layers(user_file, inline):
        for provider, models in layer.items():
            for model, entry in models.items():
                table.setdefault(provider, {}).setdefault(model, {}).update(entry)
                if sources is not None:
                    said = sources.setdefault(provider, {})
                    said[model] = f"{said[model]} + {source}" if model in said else source
    return table


def is_self_hosted(base_url: str | None) -> bool:
    """True for a URL whose host is ``localhost`` or a loopback, private or link-local IP.
    A host name other than localhost is not resolved (no DNS lookups): it counts as remote."""
    if not base_url:
        return False
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


class PriceBook:
    def __init__(self, table: dict, sources: dict | None = None):
        self.table = copy.deepcopy(table)
        self.sources = copy.deepcopy(sources or {})
        self._warned: set[str] = set()

    def _entry(self, provider: str, model: str) -> tuple[str, dict] | None:
        models = self.table.get(provider, {})
        unversioned = _BEDROCK_VERSION.sub("", model)
        family = _BEDROCK_GEO.sub("", unversioned)
        for key in (model, _DATED.sub("", model), unversioned, family, "*"):
            if key in models:
                return key, models[key]
        return None

    def lookup(
        self, provider: str, model: str, base_url: str | None = None, self_hosting: bool = False
    ) -> dict | None:
        """The model's prices; for a self-hosting provider at a self-hosted address with no
        price of its own, free."""
        found = self._entry(provider, model)
        if found is not None:
            return found[1]
        if self_hosting and is_self_hosted(base_url):
            return SELF_HOSTED
        return None

    def source(
        self, provider: str, model: str, base_url: str | None = None, self_hosting: bool = False
    ) -> str | None:
        """Where :meth:`lookup`'s answer came from, in words; None when there is no price."""
        found = self._entry(provider, model)
        if found is not None:
            key, _ = found
            origin = self.sources.get(provider, {}).get(key, "given")
            return origin if key == model else f"{origin} ({provider}.{key!r})"
        if self_hosting and is_self_hosted(base_url):
            return f"self-hosted at {urlsplit(base_url or '').hostname}: free"
        return None

    def cost(
        self,
        provider: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int = 0,
        cache_write_tokens: int = 0,
        *,
        base_url: str | None = None,
        self_hosting: bool = False,
    ) -> float:
        """USD for one call. Input tokens include cached and cache-written ones."""
        entry = self.lookup(provider, model, base_url, self_hosting)
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
