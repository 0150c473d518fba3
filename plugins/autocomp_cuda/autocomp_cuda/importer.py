"""Problems from outside the suite: a KernelBench checkout, or any single reference file.

A KernelBench checkout keeps its problems in ``KernelBench/level{1..4}/{id}_{Name}.py``
(or ``level{N}/`` directly when the path points inside it). Imported ids are ``kb/L{N}/{id}``;
a single file gets ``file:{path}``. Imported problems pass the same quality gate as ours
(see ``gate.py``). On a GPU (size tier ``full``) they run at their own sizes; on the CPU
device (tier ``tiny``) their size constants are halved until one forward fits a budget
(``runtime/shrink.py``), unless the config gives ``size_overrides`` for them.
"""

from __future__ import annotations

import re
from pathlib import Path

from .problemset import ProblemSpec, parse_problem

FILE_NAME = re.compile(r"^(?P<id>\d+)_(?P<name>.+)\.py$")


def kernelbench_levels(root: Path) -> dict[int, Path]:
    root = Path(root).expanduser()
    for base in (root / "KernelBench", root):
        found = {
            int(p.name[5:]): p
            for p in base.glob("level[0-9]*")
            if p.is_dir() and p.name[5:].isdigit()
        }
        if found:
            return found
    raise FileNotFoundError(
        f"{root}: no KernelBench level folders (expected KernelBench/level1 ... level4)"
    )


def import_kernelbench(
    root: Path, levels: tuple[int, ...] = (1, 2, 3, 4), overrides: dict[str, dict] | None = None
) -> list[ProblemSpec]:
    """Every parseable problem of the chosen levels, ordered by level and number."""
    specs = []
    for level, folder in sorted(kernelbench_levels(root).items()):
        if level not in levels:
            continue
        files = [
            (int(m.group("id")), p) for p in folder.glob("*.py") if (m := FILE_NAME.match(p.name))
        ]
        for number, path in sorted(files):
            problem_id = f"kb/L{level}/{number}"
            try:
                spec = parse_problem(path, problem_id, origin="kernelbench")
            except ValueError:
                continue
            spec.description = (
                spec.description
                if not spec.description.startswith("KernelBench-format")
                else f"KernelBench level {level} problem {number}: {path.stem.split('_', 1)[1]}"
            )
            if overrides and problem_id in overrides:
                spec.tiny = dict(overrides[problem_id])
            specs.append(spec)
    return specs


def import_file(path: Path) -> ProblemSpec:
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such reference file")
    return parse_problem(path, f"file:{path}", origin="file")
