"""The wheels a user installs: built by scripts/build-wheels.sh, installed (not editable)
into a fresh virtual environment, and used there as a user would.

The environment gets the wheels of autocomp-core and every plugin (installed by pip), and
their dependencies from the wheelhouse that scripts/setup.sh fills (.venv/wheelhouse, linked
by uv from a cache kept in .test-cache/uv), so nothing is downloaded.
Every command runs outside the checkout with no PYTHONPATH, so a file a wheel forgot
cannot be found in the source tree instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from uv import find_uv_bin

from autocomp_core.testing import LLMTestServer, optimize_args

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [ROOT, *sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))]
WHEELHOUSE = Path(os.environ.get("AUTOCOMP_WHEELHOUSE", ROOT / ".venv" / "wheelhouse"))

pytestmark = pytest.mark.slow


def _pyproject(project: Path) -> dict:
    return tomllib.loads((project / "pyproject.toml").read_text())


def _wheel_of(project: Path, wheels: list[Path]) -> Path:
    name = _pyproject(project)["project"]["name"].replace("-", "_")
    return next(w for w in wheels if w.name.startswith(f"{name}-"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("dist")
    # the venv's own hatchling: no build dependency is fetched
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-wheels.sh"), str(out), "--no-isolation"],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    built = sorted(out.glob("*.whl"))
    assert len(built) == len(PROJECTS), [w.name for w in built]
    return built


def _packaged_files(project: Path) -> dict[str, str]:
    """Every file git tracks in the project's packages: path in the wheel -> path in git."""
    wheel_cfg = _pyproject(project)["tool"]["hatch"]["build"]["targets"]["wheel"]
    sources = {pkg: pkg for pkg in wheel_cfg["packages"]}
    sources.update(wheel_cfg.get("force-include", {}))  # source -> where the wheel puts it
    files = {}
    for source, target in sources.items():
        tracked = subprocess.run(
            ["git", "ls-files", "--", source],
            cwd=project,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        assert tracked, f"{project.name}: git tracks nothing under {source}"
        for path in tracked:
            files[target + path[len(source) :]] = path
    return files


def test_every_tracked_file_of_a_package_is_in_its_wheel(wheels):
    for project in PROJECTS:
        names = set(zipfile.ZipFile(_wheel_of(project, wheels)).namelist())
        missing = [src for dest, src in _packaged_files(project).items() if dest not in names]
        assert not missing, f"{project.name}: the wheel lacks {missing}"


def _entry_point_names() -> set[str]:
    return {
        name
        for project in PROJECTS
        for name in _pyproject(project)["project"].get("entry-points", {}).get("autocomp", {})
    }


def _dist_name(wheel: Path) -> str:
    return wheel.name.split("-")[0]


def _install(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command[:4]}: {done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def user_env(wheels, tmp_path_factory, shared_cache_dir):
    """A fresh venv holding the wheels; returns run(*args) for its autocomp-core."""
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.fail(f"no wheelhouse at {WHEELHOUSE}: scripts/setup.sh --only python fills it")
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The wheels' dependencies first (torch is most of them): uv links them from its cache of
    # the wheelhouse (kept between runs) where pip would unpack 1.5 GB anew. It installs the
    # wheels to resolve what they need, and removes them again.
    uv = [find_uv_bin(), "pip"]
    uv_cache = ["--cache-dir", str(shared_cache_dir("uv", content_addressed=True))]
    where = ["--python", str(python), "--no-index", "--find-links", str(WHEELHOUSE)]
    _install([*uv, "install", "-q", *uv_cache, *where, *map(str, wheels)])
    _install([*uv, "uninstall", "-q", "--python", str(python), *map(_dist_name, wheels)])
    # Then the wheels themselves, with pip, as a user installs them (this venv's pip installs
    # into the new one: no pip of its own needed)
    _install(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
            "--find-links",
            str(WHEELHOUSE),
            *map(str, wheels),
        ]
    )
    # every one of the wheels is pip's install (uv's is gone, not "already satisfied")
    installers = {
        record.parent.name: record.read_text().strip()
        for wheel in wheels
        for record in venv.glob(f"lib/python*/site-packages/{_dist_name(wheel)}-*/INSTALLER")
    }
    assert sorted(installers.values()) == ["pip"] * len(wheels), installers
    home = tmp_path_factory.mktemp("home")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "AUTOCOMP_PLUGINS", "VIRTUAL_ENV")
    }
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    # pip byte-compiles what it installs, uv does not: give the dependencies the sandboxed
    # evaluations import (torch, numpy) the bytecode a pip install has, or every sandboxed
    # process (which may not write bytecode) compiles torch again
    subprocess.run(
        [str(python), "-c", "import numpy, torch"],
        env={k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"},
        check=True,
    )

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(venv / "bin" / "autocomp-core"), *args],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check:
            assert result.returncode == 0, f"{args}: {result.stderr[-3000:]}"
        return result

    run.python = python
    run.env = env
    run.home = home
    return run


def test_nothing_comes_from_the_checkout(user_env):
    where = subprocess.run(
        [
            str(user_env.python),
            "-c",
            "import autocomp_core, importlib.metadata as m; "
            "print(autocomp_core.__file__); "
            "print('\\n'.join(str(e.load().__file__) for e in m.entry_points(group='autocomp')))",
        ],
        cwd=user_env.home,
        env=user_env.env,
        capture_output=True,
        text=True,
        check=True,
    )
    paths = where.stdout.split()
    assert len(paths) == 1 + len(_entry_point_names())
    venv = user_env.python.parent.parent
    assert all(Path(p).is_relative_to(venv) for p in paths), paths


def test_backends_problems_and_a_baseline_of_each(user_env):
    backends = json.loads(user_env("backends", "--json").stdout)["backends"]
    assert {b["name"] for b in backends} == _entry_point_names()
    for backend in backends:
        assert backend["healthy"], (backend["name"], backend["missing"])
        problems = json.loads(user_env("problems", backend["name"], "--json").stdout)
        first = problems[0]
        # the baseline ships inside the installed package
        assert Path(first["baseline"]).is_relative_to(user_env.python.parent.parent)
        result = json.loads(
            user_env("eval", backend["name"], first["id"], first["baseline"], "--json").stdout
        )
        assert result["correct"], (backend["name"], first["id"], result)


def test_one_iteration_optimize_against_an_llm_server(user_env, tmp_path):
    baseline = Path(json.loads(user_env("problems", "gemmini", "--json").stdout)[0]["baseline"])

    def respond(request) -> str:
        if request.prompt.rstrip().endswith("Plan:"):
            return "Keep the program as it is."
        return f"```c\n{baseline.read_text()}```\n"

    server = LLMTestServer(respond).start_in_thread()
    try:
        run_dir = tmp_path / "run"
        model = f"openai-compatible@{server.openai_base_url}::scripted"
        user_env(*optimize_args("gemmini", "gemm-64x64x64", model, run_dir))
    finally:
        server.stop_thread()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "completed"
    assert server.request_count == 2  # one plan, one implementation
