"""``autocomp-core new-backend NAME``: write a complete backend plugin package.

The package comes from the files under ``template/``: each ``*.tmpl`` file is copied with
``.tmpl`` dropped, ``package/`` renamed to the plugin's module, and these placeholders
filled in: ``{{name}}`` (the backend name), ``{{Name}}`` (its class-name form),
``{{package}}`` (the module), ``{{distribution}}`` (the PyPI name) and
``{{core_version}}``. Its knowledge pack is in the ``knowledge.toml`` format that
``KnowledgePack.from_dir`` reads.
"""
from __future__ import annotations

import keyword
import re
from collections.abc import Collection
from pathlib import Path

from .. import __version__
from ..config import ConfigError

TEMPLATE = Path(__file__).parent / "template"
NAME = re.compile(r"[a-z][a-z0-9_]{0,30}")


def placeholders(name: str) -> dict[str, str]:
    return {"name": name, "Name": "".join(part.capitalize() for part in name.split("_")),
            "package": f"autocomp_{name}", "distribution": f"autocomp-{name.replace('_', '-')}",
            "core_version": __version__}


def check_name(name: str, installed: Collection[str]) -> None:
    if not NAME.fullmatch(name) or keyword.iskeyword(name) or name.endswith("_"):
        raise ConfigError(f"backend name {name!r}: use lower-case letters, digits and '_', "
                          "starting with a letter (e.g. my_npu)")
    if name in installed:
        raise ConfigError(f"backend name {name!r}: a backend of that name is already installed")


def render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    left = re.search(r"\{\{\w+\}\}", text)
    if left:  # a template naming a placeholder that does not exist
        raise ValueError(f"unknown template placeholder {left.group()}")
    return text


def write_backend_plugin(name: str, parent: Path, installed: Collection[str] = ()) -> Path:
    """Write the plugin package for backend ``name`` into ``parent``/autocomp-NAME and
    return that folder. ``ConfigError`` for a bad name or a folder that is not empty."""
    check_name(name, installed)
    values = placeholders(name)
    root = Path(parent) / values["distribution"]
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"--dir: {root} already exists and is not empty")
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")
        parts = [values["package"] if part == "package" else part for part in relative.parts]
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(source.read_text(), values))
    return root
