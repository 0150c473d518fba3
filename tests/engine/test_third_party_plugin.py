"""A third-party backend plugin, built and installed as a real package, shows up in
`autocomp-core backends` and can be optimized with; a broken plugin is reported by name
and breaks nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autocomp_core.testing import optimize_args
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()

PLUGIN = '''
from autocomp_core import Backend, EvalResult, FailureKind, KnowledgePack, Problem, hookimpl
from autocomp_core.sandbox import SandboxLimits, run_sandboxed

BASELINE = "VALUE = 10\\n"


class AcmeBackend(Backend):
    """Programs set VALUE; smaller is faster. A test target with a real subprocess."""

    name = "acme"
    description = "ACME test accelerator"
    file_extension = ".py"
    language = "python"
    metric_unit = "ticks"

    def problems(self):
        return [Problem(id="shrink", description="make VALUE small", baseline_code=BASELINE)]

    def knowledge(self, problem):
        return KnowledgePack(architecture="ACME runs Python.", menu=["lower VALUE"],
                             rules_coding=["keep VALUE positive"])

    async def evaluate(self, problem, code, ctx):
        run = await run_sandboxed([__import__("sys").executable, "prog.py"],
                                  files={"prog.py": code + "\\nprint(VALUE)\\n"},
                                  limits=SandboxLimits(wall_s=20))
        if not run.ok:
            return EvalResult(correct=False, failure=FailureKind.CRASH, stderr=run.stderr)
        value = int(run.stdout.strip().splitlines()[-1])
        if value <= 0:
            return EvalResult(correct=False, failure=FailureKind.WRONG_ANSWER,
                              feedback="VALUE must stay positive")
        return EvalResult(correct=True, metric=value, unit="ticks")


@hookimpl
def autocomp_register_backends():
    return [AcmeBackend]
'''


def build_package(root: Path, name: str, module: str, body: str) -> Path:
    src = root / f"{name}-src"
    (src / module).mkdir(parents=True)
    (src / module / "__init__.py").write_text("")
    (src / module / "plugin.py").write_text(body)
    (src / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "0.3.1"
        [project.entry-points.autocomp]
        {name.split("-")[-1]} = "{module}.plugin"
        [tool.setuptools]
        packages = ["{module}"]
    """)
    )
    return src


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("thirdparty")
    target = root / "site"
    good = build_package(root, "autocomp-acme", "autocomp_acme", PLUGIN)
    bad = build_package(
        root, "autocomp-broken", "autocomp_broken", "raise ImportError('libacme.so not found')\n"
    )
    # its entry point ("vendor") is not named like its backend: found all the same
    other = build_package(
        root, "autocomp-vendor", "autocomp_vendor", PLUGIN.replace('"acme"', '"acme_other"')
    )
    for pkg in (good, bad, other):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--target",
                str(target),
                str(pkg),
            ],
            check=True,
        )
    return target


def env_with(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return env


def test_installed_plugin_is_listed_and_broken_one_reported(site):
    out = subprocess.run(
        [*CLI, "backends", "--json"], env=env_with(site), capture_output=True, text=True, check=True
    )
    data = json.loads(out.stdout)
    acme = next(b for b in data["backends"] if b["name"] == "acme")
    assert acme["version"] == "0.3.1" and acme["problems"] == 1
    failure = next(f for f in data["plugin_failures"] if f["plugin"] == "broken")
    assert "libacme.so not found" in failure["error"]
    problems = subprocess.run(
        [*CLI, "problems", "acme", "--json"],
        env=env_with(site),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(problems.stdout)[0]["id"] == "shrink"


def test_a_backend_registered_under_another_entry_point_name_is_found(site):
    """An engine asks the entry point named like the backend first, then every plugin."""
    problems = subprocess.run(
        [*CLI, "problems", "acme_other", "--json"],
        env=env_with(site),
        capture_output=True,
        text=True,
    )
    assert problems.returncode == 0, problems.stderr
    assert json.loads(problems.stdout)[0]["id"] == "shrink"


def test_optimize_with_the_third_party_backend(site, tmp_path):
    def responder(req):
        if req.prompt.rstrip().endswith("Plan:"):
            return "Lower VALUE to 3."
        return "```python\nVALUE = 3\n```"

    server = LLMTestServer(responder).start_in_thread()
    try:
        run_dir = tmp_path / "run"
        model = f"openai-compatible@{server.openai_base_url}::acme-coder"
        out = subprocess.run(
            [*CLI, *optimize_args("acme", "shrink", model, str(run_dir))],
            env=env_with(site),
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout)
        assert summary["initial_score"] == 10 and summary["best_score"] == 3
        assert (run_dir / "best.py").read_text().strip() == "VALUE = 3"
        assert server.request_count == 2
    finally:
        server.stop_thread()
