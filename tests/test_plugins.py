"""One plugin registry, used the pluggy way: hooks called through ``pm.hook``, misspelled
hooks refused by ``check_pending``, failures named, and ``autocomp-core plugins``."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pluggy
import pytest

from autocomp_core import ConfigError
from autocomp_core.contract.plugins import build_registry, make_backend, registry_for_backend
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def test_hooks_are_called_through_pluggy_so_monitoring_and_wrappers_apply() -> None:
    registry = build_registry()
    seen: list[str] = []
    undo = registry.manager.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append(name), lambda *args: None
    )
    assert "toy" in registry.backends()
    undo()
    assert seen == ["autocomp_register_backends"]
    hidden = build_registry(["hiding_plugin"])
    assert "toy" not in hidden.backends() and "gemmini" in hidden.backends()
    assert not hidden.failures


def test_a_backend_is_built_from_its_own_plugin_only_and_a_missing_one_lists_them_all() -> None:
    """What a Ray node loads to evaluate: the entry point named like the backend, not every
    installed plugin; a backend none of them has falls back to all, to name what is."""
    everything = {info.name for info in build_registry().loaded}
    assert {"gemmini", "rvv", "trn"} <= everything
    gemmini = registry_for_backend("gemmini")
    assert [i.name for i in gemmini.loaded if i.source == "entry point"] == ["gemmini"]
    assert make_backend("gemmini", plugins=gemmini).name == "gemmini"
    toy = registry_for_backend("toy")  # a named module (AUTOCOMP_PLUGINS): no entry point
    assert {info.source for info in toy.loaded} == {"builtin", "named"}
    missing = registry_for_backend("gemminy")
    assert {info.name for info in missing.loaded} == everything
    with pytest.raises(ConfigError, match=r"unknown backend 'gemminy' \(installed: .*gemmini"):
        make_backend("gemminy", plugins=missing)


#: runs the CLI with its arguments, then prints (to stderr) the plugin modules it imported,
#: and torch if it did
IMPORTS_PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(
    m for m in sys.modules if m == "torch" or m.startswith(("autocomp_gemmini", "autocomp_rvv",
    "autocomp_trn", "autocomp_cuda")) and not m.endswith(".plugin") and m.count(".") == 1)),
    file=sys.stderr))
from autocomp_core.cli import main
sys.argv = ["autocomp-core", *sys.argv[1:]]
main()
"""


def plugin_modules_imported_by(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS_PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stderr.strip().splitlines()[-1])


def test_a_command_imports_only_the_plugin_of_its_backend() -> None:
    """An engine or command of one backend does not pay for importing every installed
    plugin's backend; a plugin's own commands are imported when they run."""
    assert plugin_modules_imported_by("problems", "toy") == []
    gemmini = plugin_modules_imported_by("problems", "gemmini")
    assert "autocomp_gemmini.backend" in gemmini
    assert not [m for m in gemmini if not m.startswith("autocomp_gemmini")], gemmini
    assert "autocomp_cuda.cli" in plugin_modules_imported_by("cuda", "--help")
    listed = plugin_modules_imported_by("backends", "--json")
    assert {"autocomp_rvv.backend", "autocomp_trn.backend"} <= set(listed)
    assert "torch" not in listed  # the CPU device's health check reads torch's metadata


def test_a_lazy_command_that_cannot_be_imported_fails_with_one_line() -> None:
    from click.testing import CliRunner

    from autocomp_core.cli import Group

    group = Group(name="tools")
    group.add_lazy_command("broken", "no_such_module:command")
    assert group.list_commands(click.Context(group)) == ["broken"]
    result = CliRunner().invoke(group, ["broken"])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: command broken: cannot load no_such_module:command: "
        "ModuleNotFoundError: No module named 'no_such_module'\n"
    )


def test_a_misspelled_hook_is_refused_naming_the_module_and_the_hook() -> None:
    registry = build_registry(["typo_plugin"])
    assert registry.manager.get_plugin("typo_plugin") is None
    failure = next(f for f in registry.failures if f.name == "typo_plugin")
    assert failure.error == (
        "typo_plugin implements unknown hook 'autocomp_register_backend' "
        "(did you mean 'autocomp_register_backends'?)"
    )
    registry.manager.check_pending()  # what is left registered is all known hooks


def test_misspelled_hook_on_the_command_line_is_one_line_not_a_silent_unknown_backend(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('backend = "toyish"\nproblem = "sum_squares"\nplugins = ["typo_plugin"]\n')
    out = cli("optimize", str(config), "--run-dir", str(tmp_path / "run"))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "unknown backend 'toyish'" in lines[0]
    assert "typo_plugin implements unknown hook 'autocomp_register_backend'" in lines[0]


def test_a_plugin_whose_hook_raises_is_left_out_and_the_others_still_count() -> None:
    registry = build_registry(["raising_plugin"])
    backends = registry.backends()
    assert {"toy", "gemmini"} <= set(backends)
    failure = next(f for f in registry.failures if f.name == "raising_plugin")
    assert failure.error == (
        "autocomp_register_backends raised RuntimeError: licence server unreachable"
    )
    assert registry.manager.get_plugin("raising_plugin") is None


@pytest.mark.filterwarnings("ignore:Argument")
def test_a_bug_outside_any_plugin_is_not_blamed_on_one() -> None:
    registry = build_registry()
    with pytest.raises(pluggy.HookCallError):  # the caller forgot the hook's argument
        registry.call("autocomp_cli_commands")
    assert not registry.failures and registry.manager.get_plugin("cuda") is not None


def test_plugins_command_lists_versions_hooks_registrations_and_failures() -> None:
    out = cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = {row["name"]: row for row in data["plugins"]}
    gemmini = rows["gemmini"]
    assert (gemmini["distribution"], gemmini["version"], gemmini["source"]) == (
        "autocomp-gemmini",
        "0.1.0",
        "entry point",
    )
    assert gemmini["hooks"] == ["autocomp_register_backends"]
    assert gemmini["registered"] == {"backends": ["gemmini"]}
    assert rows["cuda"]["hooks"] == ["autocomp_cli_commands", "autocomp_register_backends"]
    builtin = rows["autocomp_core.llm.builtin_providers"]
    assert builtin["source"] == "builtin" and builtin["distribution"] == "autocomp-core"
    assert builtin["registered"] == {
        "llm_providers": [
            "openai",
            "anthropic",
            "openai-compatible",
            "together",
            "ollama",
            "local",
            "gemini",
            "bedrock",
        ]
    }
    assert rows["autocomp_core.executors"]["registered"] == {"executors": ["local", "ray"]}
    assert rows["toy_plugin"]["registered"] == {"backends": ["toy"]}  # from AUTOCOMP_PLUGINS
    assert data["failures"] == []
    text = cli("plugins")
    assert "autocomp-gemmini 0.1.0 (entry point: autocomp_gemmini.plugin)" in text.stdout
    assert "registered backends: gemmini" in text.stdout


def test_plugins_command_shows_why_a_plugin_failed(monkeypatch) -> None:
    monkeypatch.setenv(
        "AUTOCOMP_PLUGINS", "toy_plugin,typo_plugin,no_such_plugin_module,raising_plugin"
    )
    out = cli("plugins")
    assert out.returncode == 0, out.stderr
    assert "toy_plugin  (named: toy_plugin)\n  hooks: autocomp_register_backends" in out.stdout
    assert (
        "FAILED raising_plugin: autocomp_register_backends raised RuntimeError: licence "
        "server unreachable"
    ) in out.stdout
    assert (
        "FAILED typo_plugin: typo_plugin implements unknown hook 'autocomp_register_backend'"
    ) in out.stdout
    assert (
        "FAILED no_such_plugin_module: ModuleNotFoundError: No module named 'no_such_plugin_module'"
    ) in out.stdout


def test_hook_calls_are_traced_when_asked(monkeypatch) -> None:
    """AUTOCOMP_TRACE_HOOKS=1: one JSON line per hook call on stderr, with the plugins that
    answered, the result or the error, and the time; nothing without it."""
    monkeypatch.setenv("AUTOCOMP_PLUGINS", "toy_plugin,raising_plugin")
    assert '"hook"' not in cli("problems", "toy").stderr
    monkeypatch.setenv("AUTOCOMP_TRACE_HOOKS", "1")
    out = cli("problems", "toy")
    assert out.returncode == 0, out.stderr
    calls = [json.loads(line) for line in out.stderr.splitlines() if line.startswith('{"hook"')]
    register = [c for c in calls if c["hook"] == "autocomp_register_backends"]
    assert all(c["ms"] >= 0 and c["args"] == [] for c in register)
    # the failing plugin is called first (registered last), fails the call, is left out,
    # and the call is made again without it
    failed, answered = register
    assert failed["plugins"] == ["raising_plugin", "toy_plugin"]
    assert failed["error"] == "RuntimeError: licence server unreachable"
    assert answered["plugins"] == ["toy_plugin"]
    assert answered["result"] == "[[<class 'toy_plugin.ToyBackend'>]]"
