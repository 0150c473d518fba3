"""The problems shipped with the plugin: one folder each under ``data/problems``.

A folder holds ``problem.toml`` (description, prompt context, tolerances, benchmark size),
``kernel.h`` (the prototype every candidate is compiled against), ``baseline.c`` and
``harness.c`` (inputs, reference, checks; see ``data/runtime/rvv_harness.h``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from autocomp_core import Problem

DATA = Path(str(resources.files("autocomp_rvv"))) / "data"
PROBLEMS_DIR = DATA / "problems"
RUNTIME_DIR = DATA / "runtime"


@dataclass(frozen=True)
class ProblemSpec:
    """What the evaluator needs about a problem, from its folder."""

    id: str
    folder: Path
    function: str
    rtol: float
    atol: float
    bench_ops: int  # element operations of the benchmark shape (an FMA counts once)
    bench_load_bytes: int  # bytes the benchmark shape must load at least
    bench_store_bytes: int  # and store at least
    elem_bits: int
    case_shapes: tuple[str, ...] = ()  # the correctness cases of harness.c, as "n=7"
    bench_shape: str = ""  # the shape that is timed

    @property
    def kernel_header(self) -> Path:
        return self.folder / "kernel.h"

    @property
    def harness(self) -> Path:
        return self.folder / "harness.c"


def _read(folder: Path) -> tuple[dict, Problem]:
    meta = tomllib.loads((folder / "problem.toml").read_text())
    header = (folder / "kernel.h").read_text()
    context = (
        f"{meta['context'].strip()}\n\nThe candidate is compiled with this header force-included "
        f"(kernel.h):\n```c\n{header.strip()}\n```"
    )
    baseline = folder / "baseline.c"
    problem = Problem(
        id=folder.name,
        description=meta["description"],
        baseline_code=baseline.read_text(),
        baseline_path=baseline,
        context=context,
        metadata={
            "function": meta["function"],
            "rtol": meta.get("rtol", 0.0),
            "atol": meta.get("atol", 0.0),
            "bench_shape": meta.get("bench_shape", ""),
        },
    )
    return meta, problem


def _case_shapes(harness: str) -> tuple[str, ...]:
    """The shapes of ``h_cases`` in a harness, named by ``h_dim_names`` ("M=1, N=1, K=1")."""
    names = re.search(r"h_dim_names\[H_DIMS\]\s*=\s*\{([^}]*)\}", harness)
    cases = re.search(r"h_cases\[\]\[H_DIMS\]\s*=\s*\{(.*?)\};", harness, re.DOTALL)
    if not names or not cases:
        return ()
    dims = re.findall(r'"(\w+)"', names.group(1))
    return tuple(
        ", ".join(f"{d}={v.strip()}" for d, v in zip(dims, case.split(",")))
        for case in re.findall(r"\{([^{}]*)\}", cases.group(1))
    )


@lru_cache(maxsize=1)
def _catalog() -> dict[str, tuple[ProblemSpec, Problem]]:
    found = {}
    for folder in sorted(p for p in PROBLEMS_DIR.iterdir() if (p / "problem.toml").is_file()):
        meta, problem = _read(folder)
        spec = ProblemSpec(
            id=folder.name,
            folder=folder,
            function=meta["function"],
            rtol=float(meta.get("rtol", 0.0)),
            atol=float(meta.get("atol", 0.0)),
            bench_ops=int(meta["bench_ops"]),
            bench_load_bytes=int(meta["bench_load_bytes"]),
            bench_store_bytes=int(meta["bench_store_bytes"]),
            elem_bits=int(meta.get("elem_bits", 32)),
            case_shapes=_case_shapes((folder / "harness.c").read_text()),
            bench_shape=meta.get("bench_shape", ""),
        )
        found[folder.name] = (spec, problem)
    return found


def all_problems() -> list[Problem]:
    return [problem for _, problem in _catalog().values()]


def spec_for(problem: Problem) -> ProblemSpec:
    try:
        return _catalog()[problem.id][0]
    except KeyError:
        raise KeyError(
            f"unknown rvv problem {problem.id!r} (known: {', '.join(_catalog())})"
        ) from None
