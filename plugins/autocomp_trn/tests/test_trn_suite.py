"""The problem suites: every baseline is correct at its shapes, every optimized kernel is correct
and beats its baseline, no kernel beats its speed-of-light bound."""

from __future__ import annotations

import pytest

from autocomp_trn.kernels import OPTIMIZED
from autocomp_trn.problems.catalog import advanced, all_specs, pytorch, tutorial

pytestmark = (
    pytest.mark.slow
)  # one in-process evaluation of every shipped kernel, shared by all the tests here

NKI_IDS = [s.id for s in all_specs() if s.language == "nki"]


def test_the_suites_hold_the_original_problems_and_pytorch_sources():
    assert [s.id.split("/")[1] for s in tutorial()] == [
        "rmsnorm",
        "layernorm",
        "gemm",
        "mamba",
        "attention",
        "sd_attention",
    ]
    assert [s.id.split("/")[1] for s in advanced()] == [
        "cumsum",
        "transpose",
        "maxpool",
        "rope",
        "conv1d",
        "conv2d",
        "csa_2048",
        "csa_16384",
        "mha",
    ]
    assert len(pytorch()) >= 3 and all(s.language == "pytorch" for s in pytorch())
    for spec in all_specs():  # a reduced shape is always said in the description
        assert (spec.full_inputs is None) or "Checked and timed at" in spec.description, spec.id


@pytest.mark.parametrize("pid", NKI_IDS)
def test_every_baseline_is_correct_and_above_its_lower_bound(suite_results, pid):
    result = suite_results[pid]["baseline"]
    assert result["status"] == "ok", result.get("message")
    assert result["latency_us"] > result["lower_bound_us"] > 0


@pytest.mark.parametrize("pid", sorted(OPTIMIZED))
def test_every_optimized_kernel_is_correct_and_beats_its_baseline(suite_results, pid):
    fast, base = suite_results[pid]["optimized"], suite_results[pid]["baseline"]
    assert fast["status"] == "ok", fast.get("message")
    assert fast["latency_us"] < base["latency_us"]
    assert fast["latency_us"] > fast["lower_bound_us"]


def test_at_least_five_problems_have_optimized_kernels():
    assert len(OPTIMIZED) >= 5
