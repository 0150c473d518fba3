"""Measured values keep every digit their unit needs, in every report (``numbers.py``)."""

from __future__ import annotations

import pytest

from autocomp_core.numbers import metric_text
from autocomp_core.suite.summary import problem_row, summarize, to_markdown


@pytest.mark.parametrize(
    "value, shown",
    [
        (461425.0, "461425"),  # a cycle count: exact, never 461430 or 4.614e+05
        (123456789.0, "123456789"),
        (3, "3"),
        (655.5428, "655.543"),
        (12.3456789, "12.3457"),
        (1234.5678, "1234.568"),  # the integer part is never rounded
        (123456.7, "123456.7"),
        (0.000123456789, "0.000123457"),
        (None, "n/a"),
    ],
)
def test_metric_text(value, shown):
    assert metric_text(value) == shown


def test_the_suite_summary_shows_cycle_counts_exactly(tmp_path):
    row = problem_row("gemm", tmp_path / "gemm")  # no run yet: the row's shape, then values
    row.update(stop_reason="completed", unit="cycles", baseline=1234567.0, best=461425.0)
    row.update(speedup=1234567 / 461425, correct=True)
    text = to_markdown("suite", summarize([row], "completed"))
    assert (
        "| 1234567 cycles | 461425 cycles | - | - | 2.68x |" in text
    )  # (no held-out score, no label)
