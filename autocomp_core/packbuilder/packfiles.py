"""Knowledge-pack folders: reading one with a clear error, writing one, describing one.

A pack folder holds ``knowledge.toml`` and the Markdown files it names (the format of
``KnowledgePack.from_dir``, which plugins load their packs with). Reading checks the
keys and files first, so a typo is a one-line error instead of a silently empty menu.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import tomli_w

from ..backend import KnowledgePack
from ..errors import ConfigError
from ..mdsections import headings

MANIFEST = "knowledge.toml"
TEXT_KEYS = ("architecture", "isa")
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


def slug(text: str, limit: int = 48) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "example"


def _one_newline(text: str) -> str:
    return text.rstrip() + "\n" if text.strip() else ""


def write_pack(pack: KnowledgePack, folder: Path | str, comment: str = "") -> KnowledgePack:
    """Write ``pack`` as a pack folder and read it back with the plugins' loader; what is
    read back must equal what was written (texts end with one newline)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pack = replace(
        pack,
        architecture=_one_newline(pack.architecture),
        isa=_one_newline(pack.isa),
        examples=[replace(e, text=_one_newline(e.text)) for e in pack.examples],
    )
    data: dict[str, Any] = {}
    for key in TEXT_KEYS:
        if getattr(pack, key):
            (folder / f"{key}.md").write_text(getattr(pack, key))
            data[key] = f"{key}.md"
    data["menu"] = list(pack.menu)
    data["translation_menu"] = list(pack.translation_menu)
    data["rules"] = {kind: list(getattr(pack, f"rules_{kind}")) for kind in RULE_KINDS}
    entries, files = [], set()
    for example in pack.examples:
        name, n = f"examples/{slug(example.name)}.md", 2
        while name in files:
            name, n = f"examples/{slug(example.name)}-{n}.md", n + 1
        files.add(name)
        (folder / "examples").mkdir(exist_ok=True)
        (folder / name).write_text(example.text)
        entries.append(
            {
                "name": example.name,
                "file": name,
                "triggers": list(example.triggers),
                "phase": example.phase,
            }
        )
    if entries:
        data["examples"] = entries
    for stale in sorted((folder / "examples").glob("*.md")):  # left by an earlier build
        if f"examples/{stale.name}" not in files:
            stale.unlink()
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    (folder / MANIFEST).write_text(header + tomli_w.dumps(data))
    loaded = read_pack(folder)
    if loaded != pack:
        raise PackError(f"{folder}: the pack read back differs from the pack written")
    return loaded


def describe_pack(folder: Path | str) -> str:
    """A readable summary of a pack: every part with its size (``build-pack --inspect``)."""
    folder = Path(folder)
    pack = read_pack(folder)
    files = pack_files(folder)
    total = sum((folder / f).stat().st_size for f in files)
    out = [f"knowledge pack {folder}: {len(files)} files, {total} bytes", ""]
    out.append(f"architecture: {len(pack.architecture)} characters")
    out.append(f"isa: {len(pack.isa)} characters")
    for _, level, title in headings(pack.isa):
        if level <= 3:
            out.append(f"{'  ' * level}{'#' * level} {title}")
    for kind in RULE_KINDS:
        rules = getattr(pack, f"rules_{kind}")
        out.append(f"rules.{kind}: {len(rules)}")
        out += [f"  - {r}" for r in rules]
    for title, items in (("menu", pack.menu), ("translation_menu", pack.translation_menu)):
        out.append(f"{title}: {len(items)} items")
        out += [f"  {k}. {item}" for k, item in enumerate(items, 1)]
    out.append(
        f"examples: {len(pack.examples)} ({sum(len(e.text) for e in pack.examples)} characters)"
    )
    out += [
        f"  - {e.name} [{e.phase}] {len(e.text)} characters; triggers: "
        f"{', '.join(e.triggers) or '(none)'}"
        for e in pack.examples
    ]
    return "\n".join(out)
