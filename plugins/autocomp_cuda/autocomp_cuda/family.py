"""Problem families: what tells siblings apart, and the held-out shape of each problem.

Siblings are one operator at other shapes (``L1/matmul_square`` and ``L1/matmul_irregular``
are both ``matmul``). ``features`` gives the playbook and schedule reuse their view of a
problem: its family (AUTOCOMP ``family``, else the file's name), its shapes (the integer
module constants, in the file's order, at the run's size tier) and its dtypes.

The held-out check (``Backend.held_out_problem``) evaluates a search's best programs at a
shape the search never saw, so a program hard-coded to the searched sizes is found out:

- a suite problem: the shape ``problems/held_out.toml`` declares for the run's tier (its
  rules are written there; no prompt names these sizes);
- an imported problem or a user file (no tiny sizes of its own): shrunk the way the CPU tier
  shrinks it (``runtime/shrink.py``), to a quarter of ``TINY_BUDGET`` at the tiny tier (its
  knobs halved about once more than the searched sizes) and to the whole budget at the full
  tier (the sizes a CPU would run). The shape stays proportional and keeps the structure
  shrinking keeps. Where the smaller budget changes nothing (a problem that already fits it)
  or cannot be met (its knobs are at their floor), the check runs where the search ran (at
  the full tier, the file's own sizes: ``ProblemSpec.shrink_fallback``), on other seeds;
- None (the same shape, other seeds) for the gate's controls, which no search runs, and for
  an imported problem given ``size_overrides``: its sizes are the user's choice, and no rule
  here knows which other sizes keep them meaningful.

The held-out problem's id is the problem's with ``HELD_OUT_SUFFIX``; the backend resolves it
(``CudaBackend.spec``), so a held-out evaluation runs anywhere the backend is rebuilt.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .problemset import ProblemSpec

HELD_OUT_SUFFIX = "@held-out"
#: Shrink budget of an imported problem's held-out shape, as a fraction of ``TINY_BUDGET``.
HELD_OUT_SHRINK = {"tiny": 0.25, "full": 1.0}

_DTYPES = re.compile(
    r"torch\.(float16|half|bfloat16|float32|float64|double|int8|int32|int64|long)\b"
)
_CANONICAL = {"half": "float16", "double": "float64", "long": "int64"}


def base_id(problem_id: str) -> str:
    """The searched problem's id, given its held-out problem's (or its own)."""
    return problem_id.removesuffix(HELD_OUT_SUFFIX)


def held_out_spec(spec: ProblemSpec, size: str) -> ProblemSpec | None:
    """The problem at its held-out shape for a size tier (see the module doc), or None."""
    if spec.control is not None:
        return None
    common: dict[str, Any] = {"id": spec.id + HELD_OUT_SUFFIX, "shapes": []}
    if spec.origin == "suite":
        sizes = spec.held_out.get(size)
        if sizes is None:
            return None
        # (the ProblemSpec field of each tier's overrides is named as the tier)
        return dataclasses.replace(spec, **common, **{size: {**spec.sizes(size), **sizes}})
    if spec.tiny:  # an imported problem with the user's size_overrides
        return None
    return dataclasses.replace(spec, **common, shrink=HELD_OUT_SHRINK[size])


def family_name(spec: ProblemSpec) -> str:
    """The declared family, else the file's name without KernelBench's number (``19_ReLU``: relu)."""
    return spec.operator_family or re.sub(r"^\d+_", "", spec.path.stem).lower()


def shapes(spec: ProblemSpec, size: str) -> list[int]:
    """The integer module constants (and integers inside constant tuples), in the file's order,
    at a size tier's sizes (an imported problem's tiny tier: the file's own, before shrinking)."""
    values = {**spec.constants, **spec.sizes(size)}
    found: list[int] = []
    for value in values.values():
        items = value if isinstance(value, (tuple, list)) else [value]
        found += [v for v in items if type(v) is int]
    return found


def dtypes(spec: ProblemSpec) -> list[str]:
    """The dtypes the file names, and float32 (torch's default)."""
    named = {_CANONICAL.get(m, m) for m in _DTYPES.findall(spec.source)}
    return sorted(named | {"float32"})


def features(spec: ProblemSpec, size: str) -> dict[str, Any]:
    """The metadata the playbook and schedule reuse read (``autocomp_core.ledger.playbook``)."""
    return {"family": family_name(spec), "shapes": shapes(spec, size), "dtypes": dtypes(spec)}
