"""The core's import graph in numbers: modules, imports, circles, and imports that run up
the floors written in pyproject.toml ([tool.importlinter]); `lint-imports` checks the same
floors, this script counts. Typing-only imports count as imports.

    .venv/bin/python scripts/import_graph.py             # this checkout
    .venv/bin/python scripts/import_graph.py --rev REV   # autocomp_core as of a git revision
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).parents[1]
PACKAGE = "autocomp_core"


def floors() -> dict[str, int]:
    """Each top-level module of the core -> its floor (0 = the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "floors")["layers"]
    return {
        name.strip(): level
        for level, layer in enumerate(layers)
        for name in layer.replace("|", ":").split(":")
    }


def report(graph: grimp.ImportGraph) -> None:
    level = floors()
    modules = sorted(graph.modules)
    imports = [(a, b) for a in modules for b in sorted(graph.find_modules_directly_imported_by(a))]
    circular = [(a, b) for a, b in imports if graph.chain_exists(importer=b, imported=a)]
    in_circles = {m for pair in circular for m in pair}
    circles = {
        frozenset(
            n
            for n in in_circles
            if n == m or (graph.chain_exists(m, n) and graph.chain_exists(n, m))
        )
        for m in in_circles
    }

    def floor(module: str) -> int:
        parts = module.split(".")
        if len(parts) == 1:
            return -1  # the package root: above every floor
        if parts[1] not in level:
            sys.exit(f"error: {module} is on no floor of pyproject.toml [tool.importlinter]")
        return level[parts[1]]

    def short(module: str) -> str:
        return module.removeprefix(f"{PACKAGE}.")

    upward = [(a, b) for a, b in imports if floor(a) > floor(b) >= 0]
    print(f"modules {len(modules)}, imports between them {len(imports)}")
    print(f"circles {len(circles)} ({len(circular)} imports in them)")
    for circle in sorted(circles, key=sorted):
        print("  " + ", ".join(sorted(map(short, circle))))
    print(f"imports up a floor {len(upward)}")
    for a, b in upward:
        print(f"  {short(a)} -> {short(b)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision: its autocomp_core instead of this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.rev:
            archive = subprocess.run(
                ["git", "archive", args.rev, PACKAGE], cwd=ROOT, capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            sys.path.insert(0, tmp)
        else:
            sys.path.insert(0, str(ROOT))
        report(grimp.build_graph(PACKAGE, cache_dir=None))


if __name__ == "__main__":
    main()
