"""Reading a knowledge-pack folder, with a clear error (``prompt.pack``, ``new-backend
--pack``, and the knowledge builder reading back what it wrote).

A pack folder holds ``knowledge.toml`` and the Markdown files it names (the format of
``KnowledgePack.from_dir``, which plugins load their packs with). Reading checks the
keys and files first, so a typo is a one-line error instead of a silently empty menu.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .backend import KnowledgePack

MANIFEST = "knowledge.toml"
TEXT_KEYS = ("architecture", "architecture_compact", "isa")
LIST_KEYS = ("menu", "translation_menu")
RULE_KINDS = ("general", "planning", "coding")
EXAMPLE_KEYS = {"name", "file", "triggers", "phase"}
PHASES = ("plan", "code")


class PackError(ConfigError):
    """A folder is not a valid knowledge pack; the message says why in one line."""


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PackError(f"{where} must be a list of strings")
    return value


def check_manifest(folder: Path) -> dict[str, Any]:
    """The manifest, checked key by key against the pack format."""
    path = folder / MANIFEST
    if not path.is_file():
        raise PackError(f"no knowledge pack in {folder} (missing {MANIFEST})")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: malformed TOML: {exc}") from None
    known = {*TEXT_KEYS, *LIST_KEYS, "rules", "examples"}
    for key in data:
        if key not in known:
            raise PackError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    for key in TEXT_KEYS:
        if key in data and not (folder / str(data[key])).is_file():
            raise PackError(f"{path}: {key} names {data[key]!r}, which is not a file in {folder}")
    for key in LIST_KEYS:
        _strings(data.get(key, []), f"{path}: {key}")
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise PackError(f"{path}: rules must be a table")
    for kind, items in rules.items():
        if kind not in RULE_KINDS:
            raise PackError(f"{path}: unknown key rules.{kind} (known: {', '.join(RULE_KINDS)})")
        _strings(items, f"{path}: rules.{kind}")
    for k, example in enumerate(data.get("examples", [])):
        where = f"{path}: examples[{k}]"
        if not isinstance(example, dict):
            raise PackError(f"{where} must be a table")
        for key in ("name", "file"):
            if not isinstance(example.get(key), str) or not example[key]:
                raise PackError(f"{where}: missing {key!r}")
        if set(example) - EXAMPLE_KEYS:
            raise PackError(f"{where}: unknown key {min(set(example) - EXAMPLE_KEYS)!r}")
        if not (folder / example["file"]).is_file():
            raise PackError(f"{where}: file {example['file']!r} does not exist")
        _strings(example.get("triggers", []), f"{where}.triggers")
        if example.get("phase", "code") not in PHASES:
            raise PackError(f"{where}: phase must be one of {', '.join(PHASES)}")
    return data


def read_pack(folder: Path | str) -> KnowledgePack:
    """Load a pack folder with the plugins' own loader, after checking it."""
    folder = Path(folder)
    check_manifest(folder)
    return KnowledgePack.from_dir(folder)


def pack_files(folder: Path | str) -> list[str]:
    """The files that make up the pack (relative paths): what to copy into a plugin."""
    folder = Path(folder)
    data = check_manifest(folder)
    names = [MANIFEST, *(str(data[k]) for k in TEXT_KEYS if k in data)]
    names += [e["file"] for e in data.get("examples", [])]
    return list(dict.fromkeys(names))
