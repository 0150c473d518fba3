"""The output comparison on the trusted side: a zero tolerance allows no error at all."""

from __future__ import annotations

import numpy as np

from autocomp_trn.check import compare


def test_a_zero_tolerance_refuses_any_difference_even_at_a_zero_reference():
    ref = np.array([[0.0, 1.0, 2.0, 3.0]])
    wrong = np.array([[0.5, 1.0, 2.0, 3.0]])  # off where the reference is 0: tolerance 0
    verdict = compare([wrong], [ref], atol=0.0, rtol=0.0)
    assert not verdict.ok and "differs from the reference at 1 of 4 elements" in verdict.message
    assert compare([ref.copy()], [ref], atol=0.0, rtol=0.0).ok  # exact: passes, worst 0
    assert compare([ref.copy()], [ref], atol=0.0, rtol=0.0).worst_ratio == 0.0


def test_within_tolerance_passes_and_beyond_it_fails():
    ref = np.array([[1.0, -2.0, 0.0, 4.0]])
    near = ref + np.array([[1e-4, -1e-4, 5e-5, 0.0]])
    assert compare([near], [ref], atol=1e-4, rtol=1e-4).ok
    far = ref + np.array([[0.0, 0.0, 2e-4, 0.0]])
    assert not compare([far], [ref], atol=1e-4, rtol=1e-4).ok


def test_a_non_finite_output_names_the_input_and_an_overflow_as_a_cause():
    ref = np.ones((2, 4, 4))
    out = ref.copy()
    out[1, 2, 3] = np.inf  # e.g. exp of unshifted scores on the stressed last input
    got = compare([out], [ref], atol=1e-3, rtol=1e-3)
    assert not got.ok
    assert "first at [2, 3], on random input 2 of 2" in got.message
    assert "overflow" in got.message
