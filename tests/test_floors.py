"""The core's floors (``[tool.importlinter]`` in pyproject.toml): imports go down, never up
and never round in a circle; and a plugin that builds a backend loads no part of the engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).parents[1]
#: the engine and the LLM stack: what a plugin's own command line has no use for
ENGINE = ("autocomp_core.run.runner", "autocomp_core.engine.search", "autocomp_core.llm.client")


def test_every_import_of_the_core_goes_down_a_floor_or_stays_on_its_own():
    """Both contracts: the floors (every module placed on one) and no circle between the
    modules of a package, at any depth. The output names each import that breaks them."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_no_module_of_the_core_is_imported_back_by_what_it_imports():
    """Module by module, typing imports included: also a package and its own modules, which
    the sibling contract does not compare."""
    graph = grimp.build_graph("autocomp_core", cache_dir=None)
    circles = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert not circles


#: what a plugin's command line does: the public surface, a backend built, a problem loaded
PROBE = """
import json, sys
{plugin_import}
from autocomp_core import ConfigError, make_backend, parse_assignments

backend = make_backend({name!r}, parse_assignments({hardware!r}))
backend.load_problem(backend.problems()[0].id)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("autocomp_core"))))
"""


@pytest.mark.parametrize(
    "plugin_import,name,hardware",
    [
        ("", "toy", ()),
        ("import autocomp_cuda.cli", "cuda", ("device=cpu",)),  # `autocomp-core cuda ...`
    ],
    ids=["toy", "cuda-cli"],
)
def test_a_plugin_that_builds_a_backend_loads_no_part_of_the_engine(plugin_import, name, hardware):
    probe = PROBE.format(plugin_import=plugin_import, name=name, hardware=hardware)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "autocomp_core.contract.plugins" in loaded  # the registry built it
    assert not [m for m in loaded if m.startswith(ENGINE)]
