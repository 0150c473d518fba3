"""Measured values as the reports show them: every digit their unit needs.

A cycle or instruction count is an integer and is shown exactly (461425, never 461430 or
4.614e+05); any other value keeps six significant digits and never fewer than its
integer part needs, so a rounding never changes a digit before the decimal point.
``assets/report.js`` (``num``) follows the same rule in the HTML report.
"""

from __future__ import annotations

import math

#: beyond this a float no longer holds every integer exactly
EXACT_INTEGERS = 2**53
SIGNIFICANT_DIGITS = 6


def metric_text(value: float | int | None, missing: str = "n/a") -> str:
    if value is None:
        return missing
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < EXACT_INTEGERS:
        return str(int(value))
    whole = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    return f"{value:.{max(SIGNIFICANT_DIGITS, whole + 3)}g}"
