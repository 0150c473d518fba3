"""Shared fixtures: every shipped kernel judged at most once per session (in process), shared by
every test that needs it."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # trn_testkit

from autocomp_trn.judge import emulate
from autocomp_trn.kernels import optimized_source
from autocomp_trn.problems.catalog import spec_by_id


@cache
def _judged(problem_id: str, program: str, generation: str) -> dict:
    """The verdict of one shipped kernel on one random input (the evaluations in the other tests
    use several): ``program`` is "baseline" (the problem's own, current or ``@legacy``) or
    "optimized" (``kernels.OPTIMIZED``)."""
    spec = spec_by_id(problem_id)
    code = (
        spec.baseline_code()
        if program == "baseline"
        else optimized_source(problem_id.split("@")[0])
    )
    return emulate(spec, code, seeds=[5], generation=generation)


@pytest.fixture(scope="session")
def judged():
    """``judged(problem_id, program, generation)`` -> verdict, each judged once per session."""
    return _judged
