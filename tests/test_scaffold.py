"""``autocomp-core new-backend``: the generated plugin installs into a fresh virtual
environment and works there as generated: ``backends``, ``eval``, a two-iteration
``optimize`` against the LLM test server, and its own tests.

Offline: the fresh environment reuses this interpreter's installed dependencies through a
``.pth`` file, and pip installs the core (from this checkout) and the plugin without an
index and without build isolation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

ROOT = Path(__file__).parents[1]
CLI = preloaded_cli()

COMPREHENSION = "def saxpy(a, x, y):\n    return [a * xi + yi for xi, yi in zip(x, y)]\n"
MAPPED = (
    "from operator import add\n\n\ndef saxpy(a, x, y):\n"
    "    return list(map(add, map(a.__mul__, x), y))\n"
)


def respond(request) -> str:
    """Plan one step; implement it: first a comprehension, then C built-ins."""
    if request.prompt.rstrip().endswith("Plan:"):
        return "Replace the loop by a comprehension over zip, then by map over built-ins."
    code = MAPPED if "for xi, yi in zip" in request.prompt else COMPREHENSION
    return f"```python\n{code}```\n"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    parent = tmp_path_factory.mktemp("generated")
    out = subprocess.run(
        [*CLI, "new-backend", "my_npu", "--dir", str(parent)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return parent / "autocomp-my-npu"


@pytest.fixture(scope="module")
def venv(plugin, tmp_path_factory) -> dict[str, str]:
    """A fresh virtual environment with the core installed and the plugin installed editable,
    as its README says, and the environment to run its commands with (nothing of this
    process's plugin setup)."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    Path(site.strip(), "shared-dependencies.pth").write_text(sysconfig.get_paths()["purelib"])
    env = {
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path_factory.mktemp("home")),
        "LANG": "C.UTF-8",
    }
    done = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            str(ROOT),
            "-e",
            str(plugin),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return env


def run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_the_generated_package_is_complete(plugin):
    package = plugin / "autocomp_my_npu"
    for path in ("pyproject.toml", "README.md", "tests/test_my_npu_backend.py"):
        assert (plugin / path).is_file(), path
    for path in (
        "plugin.py",
        "backend.py",
        "harness.py",
        "knowledge/knowledge.toml",
        "knowledge/architecture.md",
        "knowledge/isa.md",
        "knowledge/examples/comprehension.md",
        "problems/saxpy/baseline.py",
        "problems/saxpy/reference.py",
        "problems/saxpy/problem.toml",
    ):
        assert (package / path).is_file(), path
    pyproject = (plugin / "pyproject.toml").read_text()
    assert '[project.entry-points.autocomp]\nmy_npu = "autocomp_my_npu.plugin"' in pyproject
    assert not list(plugin.rglob("*.tmpl"))
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=plugin,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


@pytest.mark.slow
def test_installed_it_is_listed_evaluates_and_optimizes(plugin, venv, tmp_path):
    backends = run(venv, "autocomp-core", "backends", "--json")
    assert backends.returncode == 0, backends.stderr
    listed = {b["name"]: b for b in json.loads(backends.stdout)["backends"]}
    assert listed["my_npu"]["healthy"] and listed["my_npu"]["problems"] == 1
    assert listed["my_npu"]["version"] == "0.1.0"

    baseline = plugin / "autocomp_my_npu" / "problems" / "saxpy" / "baseline.py"
    evaluated = run(
        venv,
        "autocomp-core",
        "eval",
        "my_npu",
        "saxpy",
        str(baseline),
        "--hw",
        "ops_per_cycle=2",
        "--json",
    )
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert result["correct"] and result["unit"] == "cycles"
    assert result["metric"] == -(-result["extra"]["instructions"] // 2)

    server = LLMTestServer(respond).start_in_thread()
    try:
        optimized = run(
            venv,
            "autocomp-core",
            "optimize",
            "--backend",
            "my_npu",
            "--problem",
            "saxpy",
            "--model",
            f"openai-compatible@{server.openai_base_url}::scripted",
            "--iterations",
            "2",
            "--beam-size",
            "1",
            "--plans",
            "1",
            "--codes",
            "1",
            "--run-dir",
            str(tmp_path / "run"),
            "--quiet",
            "--json",
        )
    finally:
        server.stop_thread()
    assert optimized.returncode == 0, optimized.stderr[-3000:]
    summary = json.loads(optimized.stdout)
    assert summary["iterations_completed"] == 2
    assert summary["best_score"] < summary["initial_score"] / 10
    assert (tmp_path / "run" / "best.py").read_text().strip() == MAPPED.strip()


def test_the_installed_core_ships_its_templates_and_type_information(venv, tmp_path):
    found = run(
        venv,
        "python",
        "-c",
        "import autocomp_core, pathlib; print(pathlib.Path(autocomp_core.__file__).parent)",
        cwd=tmp_path,
    )
    installed = Path(found.stdout.strip())
    assert installed.parent.name == "site-packages", installed  # the wheel, not this checkout
    assert (installed / "py.typed").is_file()
    again = run(venv, "autocomp-core", "new-backend", "other_npu", "--dir", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "autocomp-other-npu" / "autocomp_other_npu" / "backend.py").is_file()


@pytest.mark.slow
def test_its_own_tests_pass_as_generated(plugin, venv):
    done = run(venv, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=plugin)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout


@pytest.mark.parametrize(
    "name, message",
    [
        ("My-NPU", "backend name 'My-NPU': use lower-case letters"),
        ("class", "backend name 'class': use lower-case letters"),
        ("toy", "backend name 'toy': a backend of that name is already installed"),
    ],
)
def test_a_bad_name_is_refused_in_one_line(name, message, tmp_path):
    out = subprocess.run(
        [*CLI, "new-backend", name, "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: {message}") and len(out.stderr.splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_an_existing_package_is_never_overwritten(plugin):
    out = subprocess.run(
        [*CLI, "new-backend", "my_npu", "--dir", str(plugin.parent)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "already exists and is not empty" in out.stderr
