"""``autocomp-core new-backend NAME --pack DIR``: a plugin started from a pack that
``build-pack`` made (the scripted LLM server builds a small one for the made-up "Vecto"
target). The pack's files land in the plugin's knowledge folder as they are, and the
generated plugin evaluates and passes its own tests with that pack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from pack_helpers import DOCS, make_pdf, model_of

from autocomp_core.contract.backend import KnowledgePack
from autocomp_core.contract.packs import pack_files, read_pack
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.packbuilder.builder import BuildOptions, PackBuilder
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


@pytest.fixture(scope="module")
def pack(pack_server, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("vecto")
    out = folder / "pack"
    # the guide and the PDF's ISA: a pack with no ISA entry fails its build
    anyio.run(
        PackBuilder(
            BuildOptions(
                sources=[str(DOCS / "vecto-guide.md"), str(make_pdf(folder / "rules.pdf"))],
                out=out,
                model=model_of(pack_server),
                target="Vecto",
                llm=LLMSettings(max_retries=0, timeout_s=30),
                quiet=True,
            )
        ).build
    )
    return out


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd
    )


def plugin_env(root: Path) -> dict[str, str]:
    """This process's environment with the generated plugin importable and loaded by name."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    env["AUTOCOMP_PLUGINS"] = "autocomp_vecto.plugin"
    return env


@pytest.mark.slow
def test_a_plugin_started_from_a_built_pack_uses_it_and_passes_its_tests(pack, tmp_path):
    made = cli("new-backend", "vecto", "--dir", str(tmp_path), "--pack", str(pack))
    assert made.returncode == 0, made.stderr
    root = tmp_path / "autocomp-vecto"
    knowledge = root / "autocomp_vecto" / "knowledge"

    copied = sorted(str(p.relative_to(knowledge)) for p in knowledge.rglob("*") if p.is_file())
    assert copied == sorted(pack_files(pack))  # the pack's files and nothing else (no .build)
    for name in copied:
        assert (knowledge / name).read_bytes() == (pack / name).read_bytes(), name
    assert KnowledgePack.from_dir(knowledge) == read_pack(pack)
    readme = (root / "README.md").read_text()
    assert "built by `autocomp-core build-pack` for Vecto with `openai-compatible@" in readme

    env = plugin_env(root)
    listed = cli("backends", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    vecto = next(b for b in json.loads(listed.stdout)["backends"] if b["name"] == "vecto")
    assert vecto["healthy"]
    baseline = root / "autocomp_vecto" / "problems" / "saxpy" / "baseline.py"
    evaluated = cli("eval", "vecto", "saxpy", str(baseline), "--json", env=env)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["correct"]

    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout


def test_the_language_and_extension_reach_the_backend(pack, tmp_path):
    made = cli(
        "new-backend", "vecto", "--dir", str(tmp_path), "--pack", str(pack), "--language", "cuda"
    )
    assert made.returncode == 0, made.stderr
    backend = (tmp_path / "autocomp-vecto" / "autocomp_vecto" / "backend.py").read_text()
    assert 'file_extension = ".cu"' in backend and 'language = "cuda"' in backend


def _broken_packs(pack: Path, tmp: Path) -> dict[str, Path]:
    """Copies of the pack, each broken one way."""
    found = {}
    for what, edit in [
        (
            "missing file",
            lambda text: text.replace(
                'architecture = "architecture.md"', 'architecture = "gone.md"'
            ),
        ),
        ("no menu", lambda text: text.split("menu = [")[0] + "menu = []\n"),
        (
            "outside",
            lambda text: text.replace(
                'architecture = "architecture.md"', 'architecture = "../secret.md"'
            ),
        ),
    ]:
        folder = tmp / what.replace(" ", "-") / "pack"
        folder.mkdir(parents=True)
        for name in pack_files(pack):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes((pack / name).read_bytes())
        (folder.parent / "secret.md").write_text("not part of the pack")
        manifest = folder / "knowledge.toml"
        broken = edit(manifest.read_text())
        assert broken != manifest.read_text(), what
        manifest.write_text(broken)
        found[what] = folder
    return found


@pytest.mark.parametrize(
    "what, message",
    [
        ("missing file", "architecture names 'gone.md', which is not a file"),
        ("no menu", "has no optimization menu"),
        ("outside", "'../secret.md' is outside the pack folder"),
        ("not a pack", "no knowledge pack in"),
    ],
)
def test_a_bad_pack_is_refused_in_one_line_and_nothing_is_written(pack, tmp_path, what, message):
    folder = _broken_packs(pack, tmp_path).get(what, tmp_path)
    parent = tmp_path / "plugins"
    out = cli("new-backend", "vecto", "--dir", str(parent), "--pack", str(folder))
    assert out.returncode == 2
    assert out.stderr.startswith("error: --pack: ") and len(out.stderr.strip().splitlines()) == 1
    assert message in out.stderr
    assert not parent.exists() or not any(parent.iterdir())
