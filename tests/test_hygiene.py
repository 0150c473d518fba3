"""The core's hygiene: light dependencies, one async style, lint-clean code, and a public
surface that holds everything the plugins use."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import autocomp_core

ROOT = Path(__file__).parents[1]
CORE = ROOT / "autocomp_core"
#: asyncio names with no anyio counterpart: event-loop callbacks on a file descriptor, and
#: the loop of a server thread (each use says why next to the import)
ASYNCIO_WITHOUT_ANYIO = {
    "get_running_loop",
    "AbstractEventLoop",
    "new_event_loop",
    "run_coroutine_threadsafe",
}


def core_modules() -> list[Path]:
    return [p for p in CORE.rglob("*.py") if "scaffold/template" not in p.as_posix()]


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_numpy_is_not_a_core_dependency():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps if d.lower().startswith("numpy")]
    importing = [
        p.name for p in core_modules() if "numpy" in imported_modules(ast.parse(p.read_text()))
    ]
    assert not importing


def test_the_core_uses_anyio_and_asyncio_only_where_anyio_has_no_equivalent():
    for path in core_modules():
        source = path.read_text()
        tree = ast.parse(source)
        if "asyncio" not in imported_modules(tree):
            continue
        used = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "asyncio"
        }
        assert used <= ASYNCIO_WITHOUT_ANYIO, (
            f"{path.relative_to(ROOT)} uses asyncio.{sorted(used - ASYNCIO_WITHOUT_ANYIO)}: use anyio"
        )
        lines = source.splitlines()
        at = lines.index("import asyncio")
        assert lines[at - 1].startswith("#"), (
            f"{path.relative_to(ROOT)}: say in a comment above `import asyncio` why anyio won't do"
        )


def test_plugins_import_only_the_public_surface_of_the_core():
    wrong = []
    for path in sorted((ROOT / "plugins").glob("*/autocomp_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autocomp_core"):
                for alias in node.names:
                    if (
                        node.module == "autocomp_core.cli"
                        or alias.name.startswith("_")
                        or alias.name not in autocomp_core.__all__
                    ):
                        wrong.append(
                            f"{path.relative_to(ROOT)}: from {node.module} import {alias.name}"
                        )
    assert not wrong


def test_the_package_is_typed():
    assert (CORE / "py.typed").is_file()


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_core_modules_import_no_private_name_of_another():
    """A module's underscored names are its own: what another module needs is public."""
    wrong = []
    for path in core_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("autocomp_core")
            ):
                wrong += [
                    f"{path.relative_to(ROOT)}: from {'.' * node.level}{node.module or ''} "
                    f"import {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert not wrong


def test_no_test_imports_a_conftest_by_name():
    """``from conftest import ...`` gets whichever conftest came first on the path; helpers
    live in modules of their own."""
    wrong = []
    for path in [*(ROOT / "tests").rglob("*.py"), *(ROOT / "plugins").glob("*/tests/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name and name.split(".")[-1] == "conftest" for name in names):
                wrong.append(str(path.relative_to(ROOT)))
    assert not wrong


#: Exceptions of the core that never reach a user: each is caught where it is raised.
INTERNAL_EXCEPTIONS = {
    "RunStopped",
    "BudgetReached",  # control flow: the search stops and saves its state
    "Unreadable",  # the report server answers 404 for a file it cannot read
    "EditParseError",
    "EditApplyError",  # an answer that fails to parse: a failed candidate
    "NoSlot",  # the Ray executor's: an evaluation with no slot left becomes an infra error
    "NoNodes",  # the Ray executor's RunStopped: the run stops, resumable, when no node is back
}


def test_every_error_the_core_raises_on_purpose_is_an_autocomp_error():
    """One base: ``except AutocompError`` catches config, plugin, LLM, backend and run
    errors alike, and anything else is a bug."""
    from autocomp_core.errors import AutocompError

    outside = []
    for path in core_modules():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name not in INTERNAL_EXCEPTIONS:
                cls = getattr(__import__(module, fromlist=["_"]), node.name, None)
                if (
                    isinstance(cls, type)
                    and issubclass(cls, BaseException)
                    and not issubclass(cls, AutocompError)
                ):
                    outside.append(f"{module}.{node.name}")
    assert not outside
    from autocomp_core.engine.journal import ReplayMiss
    from autocomp_core.llm.errors import LLMConfigError
    from autocomp_core.sandbox import SandboxError

    assert all(issubclass(e, AutocompError) for e in (ReplayMiss, LLMConfigError, SandboxError))


def test_pydantic_errors_are_worded_in_one_place():
    """``ValidationError.errors()`` is read by one formatter (config.describe_validation_error)."""
    readers = []
    for path in [*core_modules(), *ROOT.glob("plugins/*/autocomp_*/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "errors"
                and not call.args
                for call in ast.walk(node)
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert readers == ["autocomp_core/config.py:describe_validation_error"]
