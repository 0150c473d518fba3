"""Installing autocomp-trn alone on top of autocomp-core, editable and from a built wheel, each in
a fresh virtual environment, adds ``trn`` to ``autocomp-core backends`` and ``doctor``.

Offline and fast: the fresh environments see this interpreter's packages (autocomp-core and the
third-party dependencies) through a site directory of links that leaves out any autocomp-trn
already installed, and pip installs the plugin with --no-deps --no-build-isolation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autocomp_trn.problems.catalog import all_specs

#: what the installed plugin lists: every problem of this checkout's catalog
PROBLEMS = f"{len(all_specs())} problems"

PLUGIN = Path(__file__).resolve().parents[1]


def fresh_venv(root: Path) -> Path:
    """A venv whose site path adds links to this interpreter's packages, autocomp-trn excluded."""
    deps = root / "deps"
    deps.mkdir(parents=True)
    shared = Path(sysconfig.get_paths()["purelib"])
    for entry in shared.iterdir():
        if "autocomp_trn" not in entry.name and "autocomp-trn" not in entry.name:
            (deps / entry.name).symlink_to(entry)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "shared-deps.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    return python


def clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOCOMP_PLUGINS")}
    env["HOME"] = str(tmp)
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def cli(python: Path, env: dict, *args: str) -> str:
    done = subprocess.run(
        [python, "-c", "from autocomp_core.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=env["HOME"],
    )
    return done.stdout + done.stderr


def pip(python: Path, env: dict, *args: str) -> None:
    subprocess.run(
        [python, "-m", "pip", *args],
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
        cwd=env["HOME"],
    )


def trn_line(output: str) -> str:
    return next((line for line in output.splitlines() if line.startswith("trn ")), "")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = clean_env(out)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(PLUGIN),
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
        cwd=out,
    )
    return next(out.glob("autocomp_trn-*.whl"))


def test_editable_install_adds_trn(tmp_path):
    python = fresh_venv(tmp_path)
    env = clean_env(tmp_path)
    assert trn_line(cli(python, env, "backends")) == ""
    pip(python, env, "install", "--no-deps", "--no-build-isolation", "-e", str(PLUGIN))
    line = trn_line(cli(python, env, "backends"))
    assert "0.1.0" in line and PROBLEMS in line and "[ok]" in line
    assert "trn:" in cli(python, env, "doctor")


def test_wheel_install_adds_trn_and_evaluates(tmp_path, wheel):
    python = fresh_venv(tmp_path)
    env = clean_env(tmp_path)
    pip(python, env, "install", "--no-deps", str(wheel))
    assert PROBLEMS in trn_line(cli(python, env, "backends"))
    installed = subprocess.run(
        [
            python,
            "-c",
            "import autocomp_trn, pathlib; print(pathlib.Path(autocomp_trn.__file__).parent)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert str(PLUGIN) not in installed  # the wheel's copy, not this checkout
    kernel = Path(installed) / "problems" / "advanced" / "rope.py"
    out = cli(
        python,
        env,
        "eval",
        "trn",
        "advanced/rope",
        str(kernel),
        "--hw",
        "mode=emulator",
        "--option",
        "seeds=1",
    )
    assert "correct:" in out and "modelled us" in out, out
