"""The plugin author's kit (autocomp_core.contract.kit), on real child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import autocomp_core
from autocomp_core import (
    EvaluationRecord,
    FailureKind,
    SandboxLimits,
    applying_limits,
    child_import_path,
    imported_modules,
    last_json_line,
    limits_section,
    module_aliases,
    run_failure,
    run_sandboxed,
)


def test_a_child_imports_the_plugin_from_where_this_process_does(tmp_path, monkeypatch):
    root = tmp_path / "checkout"
    (root / "kit_probe_pkg").mkdir(parents=True)
    (root / "kit_probe_pkg" / "__init__.py").write_text("NAME = 'probe'\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/extra/one", str(root)]))
    import kit_probe_pkg

    path = child_import_path(kit_probe_pkg)
    folders = path.split(os.pathsep)
    core = Path(autocomp_core.__file__).resolve().parents[1]
    # the plugin, the core, then what this process was given, each folder once
    assert folders == [str(root.resolve()), str(core), "/extra/one"]
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import kit_probe_pkg, json; print(json.dumps(kit_probe_pkg.__file__))",
        ],
        env={"PYTHONPATH": path, "PATH": os.environ["PATH"]},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(child.stdout) == str(root.resolve() / "kit_probe_pkg" / "__init__.py")


def test_the_last_json_line_is_the_report():
    out = 'compiling\n{"status": "early"}\nmore text\n{"status": "ok", "cycles": 12}\n\n'
    assert last_json_line(out) == {"status": "ok", "cycles": 12}
    # the last report is the one: a broken one is no report, not the one before it
    assert last_json_line('{"status": "ok"}\n{"status": "ok", "cyc') is None
    assert last_json_line("no report at all") is None
    assert last_json_line('{"a": 1}\n["a list"]') == {"a": 1}


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.asyncio
async def test_how_a_sandboxed_run_ended():
    ok = await run_sandboxed(python("print('fine')"), limits=SandboxLimits(wall_s=30))
    assert run_failure(ok, "the runner") is None

    exited = await run_sandboxed(
        python("import sys; print('bad input', file=sys.stderr); sys.exit(3)"),
        limits=SandboxLimits(wall_s=30),
    )
    kind, message = run_failure(exited, "the runner")
    assert kind == FailureKind.CRASH
    assert message == "the runner exited with status 3:\nbad input"

    killed = await run_sandboxed(
        python("import os, signal; os.kill(os.getpid(), signal.SIGABRT)"),
        limits=SandboxLimits(wall_s=30),
    )
    kind, message = run_failure(killed, "the runner")
    assert (kind, message) == (FailureKind.CRASH, "the runner was killed by signal 6")

    slow = await run_sandboxed(python("while True: pass"), limits=SandboxLimits(wall_s=1.0))
    kind, message = run_failure(slow, "the runner")
    assert (kind, message) == (
        FailureKind.TIMEOUT,
        "the runner ran past its time limit and was killed",
    )
    assert (
        run_failure(slow, "the runner", 1.0)[1]
        == "the runner ran past its 1 s limit and was killed"
    )


def test_an_evaluation_record_says_what_passed_before_a_failure():
    record = EvaluationRecord(seeds={"checks": 7}, shapes={"timed": "64x64"})
    with record.timed("build"):
        record.passed("source: no inline assembly")
    with pytest.raises(RuntimeError), record.timed("run"):
        raise RuntimeError("the simulator died")
    result = record.result(False, failure=FailureKind.CRASH, feedback="the simulator died")
    assert set(result.extra) == {"build_s"}  # the step that raised recorded no time
    assert result.verification == {
        "checks": ["source: no inline assembly"],
        "seeds": {"checks": 7},
        "shapes": {"timed": "64x64"},
    }
    assert result.duration_s >= result.extra["build_s"]
    good = record.result(True, metric=10.0, extra={"cycles": 10.0})
    assert good.extra == {"build_s": result.extra["build_s"], "cycles": 10.0}


def test_the_model_limits_that_apply_and_their_section():
    limits = [
        ("slow_memory", lambda cycles, loads: f"{loads} loads" if loads > 10 else None),
        ("floor", lambda cycles, loads: "under the floor" if cycles < 64 else None),
    ]
    assert applying_limits(limits, 100, 3) == []
    assert limits_section([]) == ""
    found = applying_limits(limits, 10, 20)
    assert found == [
        {"limit": "slow_memory", "detail": "20 loads"},
        {"limit": "floor", "detail": "under the floor"},
    ]
    assert limits_section(found).splitlines() == [
        "Model limits that apply to this program (where the modelled number is least certain):",
        "- 20 loads",
        "- under the floor",
    ]


def test_a_screen_sees_every_spelling_of_a_module():
    import ast

    tree = ast.parse(
        "import torch as t\n"
        "import numpy\n"
        "from torch.nn import functional as G, init\n"
        "from . import helpers\n"
        "T = t\n"
        "relu = T.nn.functional.relu\n"
        "x = t.zeros(3)\n"  # a tensor, not an alias
    )
    assert module_aliases(tree, {"torch"}) == {"torch", "t", "G", "init", "T", "relu"}
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [imported_modules(n) for n in imports] == [["torch"], ["numpy"], ["torch.nn"], ["."]]
