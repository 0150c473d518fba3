"""Shared fixtures: one evaluation of the whole suite (baselines and optimized kernels, in process)
shared by every test that needs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # trn_testkit

from autocomp_trn.judge import emulate
from autocomp_trn.kernels import OPTIMIZED, optimized_source
from autocomp_trn.problems.catalog import all_specs


@pytest.fixture(scope="session")
def suite_results() -> dict[str, dict[str, dict]]:
    """problem id -> {"baseline": verdict, "optimized": verdict}: every shipped kernel, judged once
    (on one random input: the evaluations in the other tests use several)."""
    results: dict[str, dict[str, dict]] = {}
    for spec in all_specs():
        if spec.language != "nki":
            continue
        results[spec.id] = {"baseline": emulate(spec, spec.baseline_code(), seeds=[5])}
        if spec.id in OPTIMIZED:
            results[spec.id]["optimized"] = emulate(spec, optimized_source(spec.id), seeds=[5])
    return results
