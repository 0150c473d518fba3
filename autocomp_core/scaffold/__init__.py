"""``autocomp-core new-backend NAME``: write a complete backend plugin package.

The package comes from the files under ``template/``: each ``*.tmpl`` file is copied with
``.tmpl`` dropped, ``package/`` renamed to the plugin's module, and these placeholders
filled in, in file names too: ``{{name}}`` (the backend name), ``{{Name}}`` (its
class-name form), ``{{package}}`` (the module), ``{{distribution}}`` (the PyPI name),
``{{language}}`` and ``{{extension}}`` (of the target's programs) and ``{{core_version}}``.
Its knowledge pack is in the ``knowledge.toml`` format that ``KnowledgePack.from_dir``
reads; ``--pack DIR`` puts a pack made by ``build-pack`` in its place.
"""

from __future__ import annotations

import keyword
import re
import shutil
from collections.abc import Collection
from pathlib import Path

from .. import __version__
from ..errors import ConfigError

TEMPLATE = Path(__file__).parent / "template"
NAME = re.compile(r"[a-z][a-z0-9_]{0,30}")
LANGUAGE = re.compile(r"[a-z][a-z0-9+#_-]{0,19}")
EXTENSION = re.compile(r"\.[A-Za-z0-9_]{1,10}")
#: the file extension of programs in a language, when --extension is not given
EXTENSIONS = {
    "python": ".py",
    "c": ".c",
    "cpp": ".cpp",
    "c++": ".cpp",
    "cuda": ".cu",
    "rust": ".rs",
    "asm": ".s",
    "mlir": ".mlir",
}


def placeholders(name: str, language: str = "python", extension: str = ".py") -> dict[str, str]:
    return {
        "name": name,
        "Name": "".join(part.capitalize() for part in name.split("_")),
        "package": f"autocomp_{name}",
        "distribution": f"autocomp-{name.replace('_', '-')}",
        "language": language,
        "extension": extension,
        "core_version": __version__,
    }


def check_name(name: str, installed: Collection[str]) -> None:
    if not NAME.fullmatch(name) or keyword.iskeyword(name) or name.endswith("_"):
        raise ConfigError(
            f"backend name {name!r}: use lower-case letters, digits and '_', "
            "starting with a letter (e.g. my_npu)"
        )
    if name in installed:
        raise ConfigError(f"backend name {name!r}: a backend of that name is already installed")


def program_kind(language: str, extension: str | None) -> tuple[str, str]:
    """The language tag and file extension of the target's programs, checked."""
    if not LANGUAGE.fullmatch(language):
        raise ConfigError(
            f"--language {language!r}: use a lower-case tag as in a Markdown code "
            "fence (python, c, cpp)"
        )
    if extension is None:
        if language not in EXTENSIONS:
            raise ConfigError(
                f"--extension: say the file extension of {language} programs (e.g. --extension .kn)"
            )
        extension = EXTENSIONS[language]
    if not EXTENSION.fullmatch(extension):
        raise ConfigError(
            f"--extension {extension!r}: a dot and up to 10 letters or digits (e.g. .c)"
        )
    return language, extension


def render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    left = re.search(r"\{\{\w+\}\}", text)
    if left:  # a template naming a placeholder that does not exist
        raise ValueError(f"unknown template placeholder {left.group()}")
    return text


def pack_to_copy(folder: Path) -> list[str]:
    """The files of a knowledge pack to put into the plugin, after checking the pack: it
    loads, has an optimization menu, and names no file outside its folder."""
    from ..contract.packs import PackError, pack_files, read_pack

    try:
        pack = read_pack(folder)
        files = pack_files(folder)
    except PackError as exc:
        raise ConfigError(f"--pack: {exc}") from None
    if not pack.menu:
        raise ConfigError(f"--pack: {folder} has no optimization menu (planning prompts need one)")
    inside = folder.resolve()
    for name in files:
        if not (folder / name).resolve().is_relative_to(inside):
            raise ConfigError(f"--pack: {folder}: {name!r} is outside the pack folder")
    return files


def pack_origin(folder: Path, package: str) -> str:
    """The README section that says where the plugin's knowledge pack came from."""
    from ..packbuilder.builder import build_status

    status = build_status(folder)
    if status is None:
        made = "was copied from a knowledge pack folder"
    else:
        made = (
            f"was built by `autocomp-core build-pack` for {status['target']} with "
            f"`{status['model']}` from {status['documents']} documents "
            f"({status['menu_items']} menu items, {status['examples_kept']} examples); "
            "the build's report stays in the pack folder (`.build/report.md`)"
        )
    return (
        f"\n## Knowledge pack\n\n`{package}/knowledge/` {made}. Rebuild the pack and copy it "
        "here again, or edit its files directly. The stand-in problem and evaluator still run "
        'Python programs: replace them with your target\'s (see "Make it yours").\n'
    )


def write_backend_plugin(
    name: str,
    parent: Path,
    installed: Collection[str] = (),
    *,
    pack: Path | None = None,
    language: str = "python",
    extension: str | None = None,
) -> Path:
    """Write the plugin package for backend ``name`` into ``parent``/autocomp-NAME and
    return that folder. ``pack``: a knowledge-pack folder (``build-pack --out``) that
    becomes the plugin's knowledge pack. ``ConfigError`` for a bad name, language,
    extension or pack, or a folder that is not empty; nothing is written then."""
    check_name(name, installed)
    values = placeholders(name, *program_kind(language, extension))
    pack_files: list[str] = pack_to_copy(Path(pack)) if pack is not None else []
    root = Path(parent) / values["distribution"]
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"--dir: {root} already exists and is not empty")
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")
        parts = [
            values["package"] if part == "package" else render(part, values)
            for part in relative.parts
        ]
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(source.read_text(), values))
    if pack is not None:
        knowledge = root / values["package"] / "knowledge"
        shutil.rmtree(knowledge)
        for file in pack_files:
            (knowledge / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(pack) / file, knowledge / file)
        with (root / "README.md").open("a") as readme:
            readme.write(pack_origin(Path(pack), values["package"]))
    return root
