"""The README tells the truth: every TOML block in it and every example config passes the
project's own validation, and every ``autocomp-core`` command it shows that can run
offline is run here (in a scratch folder laid out as the README assumes)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from click.testing import CliRunner

from autocomp_core.cli import cli
from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient
from autocomp_core.run.runner import prepare

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))

#: how each README command is exercised: "run" (exit 0), "needs a key" (exit 2 naming the
#: missing key: everything before it checks out), "serves" (until stopped), or why not here
HOW = {
    "autocomp-core backends": "run",
    "autocomp-core problems gemmini": "run",
    "autocomp-core optimize examples/demo.toml": "scripts/setup.sh runs it (the embedded model is too slow for the test suite)",
    "autocomp-core optimize --backend gemmini --problem gemm-64 --model "
    "anthropic::claude-sonnet-4-5 --iterations 8": "needs a key",
    "autocomp-core problems trn": "run",
    "autocomp-core optimize examples/trn-attention.toml": "needs a key",
    "autocomp-core report runs/my-run --html": "run",
    "autocomp-core report runs/ --html": "run",
    "autocomp-core serve runs/": "serves",
    "autocomp-core resume runs/my-run": "run",
    "autocomp-core resume runs/my-run --set budget.usd=40": "run",
    "autocomp-core replay runs/my-run": "run",
    "autocomp-core replay runs/my-run --reevaluate": "run",
    "autocomp-core report runs/my-run": "run",
    "autocomp-core build-pack docs/ manual.pdf https://vendor.example/isa/ --out "
    "packs/mytarget --model openai::gpt-5-mini --backend mytarget --budget-usd 5": "reads a web site and asks a paid model",
    "autocomp-core build-pack docs/ --out packs/mytarget --dry-run": "run",
    "autocomp-core build-pack --inspect packs/mytarget": "run",
    "autocomp-core optimize --backend mytarget --problem p1 --set prompt.pack=packs/mytarget": "names the reader's own backend",
    "autocomp-core eval gemmini gemm-64 my_kernel.c --json": "run",
    "autocomp-core doctor": "run",
    "autocomp-core plugins [--json]": "run",
    "autocomp-core --log-json optimize ...": "run",
    "autocomp-core new-backend my_npu": "run",
    "autocomp-core plugins": "run",
    "autocomp-core optimize-suite --backend gemmini --all --suite-dir runs/gemmini-suite "
    "--config shared.toml": "shared.toml is the reader's; tests/engine/test_suite.py runs suites",
    "autocomp-core optimize-suite gemm-64x64x64 conv-small-3x3s2 --backend gemmini "
    "--suite-dir runs/two": "needs a key; tests/engine/test_suite.py runs suites",
    "autocomp-core optimize-suite --backend cuda --dir KernelBench/level2 --suite-dir runs/l2": "needs KernelBench's files; tests/engine/test_suite.py loads a folder of them",
    "autocomp-core resume runs/gemmini-suite": "needs the suite above; tests/engine/test_suite.py resumes a suite",
    "autocomp-core report runs/gemmini-suite --html": "needs the suite above; tests/engine/test_suite.py reports on a suite",
    "autocomp-core doctor --executor ray --address HOST:PORT": "needs a Ray cluster; tests/scaleout runs it against one",
    "autocomp-core playbook list": "run",
    "autocomp-core playbook show 3": "needs an entry; tests/engine/test_playbook.py shows one",
    "autocomp-core playbook export team.jsonl": "run",
    "autocomp-core playbook import team.jsonl": "run",
    "autocomp-core playbook forget 3": "needs an entry; tests/engine/test_playbook.py forgets one",
    "autocomp-core optimize examples/gemmini-gemm.toml --set problem=gemm-64x64x64 "
    "--run-dir runs/gemm-64": "needs a key",
    "autocomp-core optimize examples/gemmini-gemm.toml --set problem=gemm-256x256x256 "
    "--reuse runs/gemm-64": "needs the run above; tests/engine/test_reuse.py reuses a run",
}


def readme_commands() -> list[str]:
    """Every ``autocomp-core`` command in the README's bash blocks, continuation lines
    joined and comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith("autocomp-core"):
                commands.append(" ".join(line.split()))
    return commands


def repo_plugin_modules() -> list[str]:
    """The plugin modules of this repository that are not installed as entry points (a
    checkout used without `pip install -e plugins/...`)."""
    installed = {ep.name for ep in entry_points(group="autocomp")}
    modules = []
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        declared = tomllib.loads(pyproject.read_text())["project"]["entry-points"]["autocomp"]
        modules += [module for name, module in declared.items() if name not in installed]
    return modules


def toml_blocks() -> list[tuple[str, dict]]:
    found = [
        (f"README.md block {n}", tomllib.loads(block))
        for n, block in enumerate(re.findall(r"```toml\n(.*?)```", README, re.S), 1)
    ]
    return found + [(path.name, tomllib.loads(path.read_text())) for path in EXAMPLES]


@pytest.mark.parametrize("name,data", toml_blocks(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_toml_block_and_example_config_is_valid(name, data):
    """Validated as a run would be (config, backend, problem, options, dead switches,
    resources), and every model string resolves to a known provider."""
    data = {**data, "plugins": [*data.get("plugins", []), *repo_plugin_modules()]}
    prep = prepare(data, with_llm=False)
    client = LLMClient(prep.config.llm, PROVIDERS)
    for model in data.get("models", {}).get("plan", []) + data.get("models", {}).get("code", []):
        client.resolve(model)


def test_every_readme_command_is_accounted_for():
    assert sorted(readme_commands()) == sorted(HOW)
    assert "autocomp-core optimize examples/demo.toml" in (ROOT / "scripts/setup.sh").read_text()


def quick_start() -> list[tuple[str, str]]:
    """(command, its comment) for every command of the README's quick start."""
    section = README[README.index("## Quick start") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        command, _, comment = line.partition(" #")
        if command.strip().startswith("autocomp-core"):
            found.append((" ".join(command.split()), comment.strip()))
    return found


def test_the_quick_start_says_which_commands_need_a_key():
    """Each quick-start command says whether it needs an API key; one that does names
    the keys its models need and how to run it without one."""
    commands = quick_start()
    assert len(commands) >= 5
    for command, comment in commands:
        if HOW[command] != "needs a key":
            assert "no key" in comment, command
            continue
        models = re.findall(r"--model (\S+)", command)
        config = next((w for w in command.split() if w.endswith(".toml")), None)
        if config:
            models += tomllib.loads((ROOT / config).read_text())["models"]["plan"]
        keys = {f"{m.split('::')[0].upper()}_API_KEY" for m in models}
        assert keys and all(f"needs {k}" in comment or f"and {k}" in comment for k in keys), (
            command,
            keys,
        )
        if config:  # a config names its models: the flag runs it on the embedded one
            assert "--model local::smollm2" in comment, command


@pytest.fixture(scope="module")
def readme_folder(tmp_path_factory):
    """A folder laid out as the README's commands assume: examples/, docs/, a finished run
    in runs/my-run (the toy backend against the scripted LLM server), a knowledge pack in
    packs/mytarget and my_kernel.c (a Gemmini program)."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    from scripted_llm import reply

    from autocomp_core.testing.llm_server import LLMTestServer

    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", folder / "examples")
    shutil.copytree(ROOT / "tests" / "packbuilder" / "docs", folder / "docs")
    shutil.copytree(ROOT / "tests" / "toybackend" / "knowledge", folder / "packs" / "mytarget")
    server = LLMTestServer(lambda r: reply(r.prompt)).start_in_thread()
    from autocomp_core import make_backend, optimize

    optimize(
        {
            "backend": "toy",
            "problem": "sum_squares",
            "run_dir": str(folder / "runs/my-run"),
            "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
            "search": {
                "iterations": 1,
                "beam_size": 1,
                "plans_per_candidate": 2,
                "codes_per_plan": 1,
            },
        }
    )
    gemmini = make_backend("gemmini", plugins=tuple(repo_plugin_modules()))
    (folder / "my_kernel.c").write_text(gemmini.load_problem("gemm-64").baseline_code)
    yield folder
    server.stop_thread()


def invoke(folder: Path, command: str, monkeypatch) -> tuple[int, str]:
    """Run a README command inside this process (click's runner) from ``folder``."""
    monkeypatch.chdir(folder)
    args = shlex.split(command.replace(" [--json]", ""))[1:]
    if args[:2] == ["--log-json", "optimize"]:  # "...": a toy run of no iterations
        args = [
            "--log-json",
            "optimize",
            str(folder / "runs/my-run/config.toml"),
            "--run-dir",
            str(folder / "runs/logged"),
            "--set",
            "llm.max_retries=0",
            "--set",
            "search.iterations=0",
        ]
    result = CliRunner().invoke(cli, args, obj=build_registry())
    return result.exit_code, result.output


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c, how in HOW.items() if how in ("run", "needs a key")])
def test_readme_command_runs(readme_folder, command, monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(readme_folder))  # no key file either
    extra = ",".join(repo_plugin_modules())
    if extra:
        monkeypatch.setenv("AUTOCOMP_PLUGINS", f"{os.environ.get('AUTOCOMP_PLUGINS', '')},{extra}")
    code, output = invoke(readme_folder, command, monkeypatch)
    if HOW[command] == "needs a key":
        assert code == 2 and "_API_KEY" in output, output
        # ... and the one line names the flag that runs the same config without a key
        assert "--model local::smollm2" in output, output
    else:
        assert code == 0, output


def test_readme_serve_command_serves(readme_folder):
    command = shlex.split("autocomp-core serve runs/")
    assert " ".join(command) in HOW
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autocomp_core.cli",
            *command[1:],
            "--port",
            "0",
        ],  # the README's port may be taken here
        cwd=readme_folder,
        stderr=subprocess.PIPE,
        text=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        line = proc.stderr.readline()
        url = re.search(r"at (http://\S+/)", line)
        assert url, line
        with urllib.request.urlopen(url.group(1) + "api/runs", timeout=30) as listing:
            assert b"my-run" in listing.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_layout_names_every_folder_and_module_of_the_core():
    layout = README.split("## Layout", 1)[1].split("```", 2)[1]
    core = ROOT / "autocomp_core"
    entries = [
        p.name + ("/" if p.is_dir() else "")
        for p in core.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py")
        or (p.is_dir() and (p / "__init__.py").is_file())
    ]
    missing = [e for e in sorted(entries) if not re.search(rf"(?<![\w/]){re.escape(e)}", layout)]
    assert not missing
