"""Knowledge-pack folders as the builder makes them: writing one (read back to check it)
and describing one (``build-pack --inspect``). Reading one is ``autocomp_core.contract.packs``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import tomli_w

from ..contract.backend import KnowledgePack
from ..contract.packs import MANIFEST, RULE_KINDS, TEXT_KEYS, PackError, pack_files, read_pack
from ..mdsections import headings


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
