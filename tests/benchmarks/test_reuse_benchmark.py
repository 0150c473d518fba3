"""Shape siblings of the toy backend's ``sum_squares`` (``sum_squares-<N>``), the problems
``benchmarks/reuse.py`` measures on."""

from __future__ import annotations

import pytest
from toy_plugin import ToyBackend

from autocomp_core import EvalContext


def test_shape_siblings_are_one_family_and_stay_unlisted():
    backend = ToyBackend()
    assert [p.id for p in backend.problems()] == [
        "sum_squares",
        "prefix_max",
        "count_pairs",
        "count_negatives",
    ]
    sibling = backend.load_problem("sum_squares-512")
    assert sibling.metadata == {"family": "sum_squares", "shapes": [512]}
    assert sibling.baseline_code == backend.load_problem("sum_squares").baseline_code
    for bad in ("sum_squares-0", "sum_squares-5000", "prefix_max-8"):
        with pytest.raises(KeyError, match="unknown problem"):
            backend.load_problem(bad)


@pytest.mark.asyncio
async def test_a_siblings_score_grows_with_its_length():
    backend = ToyBackend()
    metrics = []
    for size in (8, 64):
        problem = backend.load_problem(f"sum_squares-{size}")
        result = await backend.evaluate(problem, problem.baseline_code, EvalContext(timeout_s=60))
        assert result.correct
        metrics.append(result.metric)
    assert metrics[1] > 4 * metrics[0]  # three lists of 64 against three of 8
