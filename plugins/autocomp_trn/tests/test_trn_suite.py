"""The problem suites: every current-API baseline is correct on Trn2 and Trn3, every legacy one on
Trn1, every optimized kernel is correct and beats the baseline it was written against, no kernel
beats its speed-of-light bound."""

from __future__ import annotations

import asyncio

import pytest

from autocomp_trn.evaluate import EmulatorEvaluator, Settings
from autocomp_trn.kernels import OPTIMIZED
from autocomp_trn.problems.catalog import advanced, all_specs, llama, pytorch, spec_by_id, tutorial
from autocomp_trn.problems.spec import LEGACY_SUFFIX

pytestmark = pytest.mark.slow  # in-process evaluations of every shipped kernel

NKI_IDS = [s.id for s in all_specs() if s.language == "nki"]
LEGACY_IDS = [s.id + LEGACY_SUFFIX for s in all_specs() if s.has_legacy]
CURRENT_GENERATIONS = ("trn2", "trn3")


def test_the_suites_hold_the_original_problems_pytorch_sources_and_llama_blocks():
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
    assert [s.id.split("/")[1] for s in llama()] == [
        "mlp_prefill",
        "mlp_decode_b1",
        "mlp_decode_b32",
        "attention",
        "logits",
    ]
    for spec in all_specs():  # a reduced shape is always said in the description
        assert (spec.full_inputs is None) or "Checked and timed at" in spec.description, spec.id


def test_every_nki_problem_has_a_current_baseline_and_a_legacy_one():
    for pid in NKI_IDS:
        spec = spec_by_id(pid)
        assert "import nki\n" in spec.baseline_code() and "neuronxcc" not in spec.baseline_code(), (
            pid
        )
        legacy = spec_by_id(pid + LEGACY_SUFFIX)
        assert legacy.id == pid + LEGACY_SUFFIX and legacy.inputs == spec.inputs
        assert "from neuronxcc import nki" in legacy.baseline_code(), pid
    assert len(LEGACY_IDS) == len(NKI_IDS) == 17  # 15 original problems and 2 shape siblings


def test_legacy_and_full_combine_and_unknown_suffixes_are_refused():
    both = spec_by_id("tutorial/gemm@legacy@full")
    assert both.id == "tutorial/gemm@legacy@full"
    assert both.inputs == spec_by_id("tutorial/gemm").full_inputs
    assert both.baseline_path == spec_by_id("tutorial/gemm@legacy").baseline_path
    with pytest.raises(KeyError, match="no legacy baseline"):
        spec_by_id("pytorch/softmax@legacy")
    with pytest.raises(KeyError, match="unknown problem"):
        spec_by_id("tutorial/gemm@fast")


@pytest.mark.parametrize("generation", CURRENT_GENERATIONS)
@pytest.mark.parametrize("pid", NKI_IDS)
def test_every_current_baseline_is_correct_and_above_its_lower_bound(judged, pid, generation):
    result = judged(pid, "baseline", generation)
    assert result["status"] == "ok", result.get("message")
    assert result["latency_us"] > result["lower_bound_us"] > 0


@pytest.mark.parametrize("pid", LEGACY_IDS)
def test_every_legacy_baseline_is_still_correct_on_trn1(judged, pid):
    result = judged(pid, "baseline", "trn1")
    assert result["status"] == "ok", result.get("message")
    assert result["latency_us"] > result["lower_bound_us"] > 0


@pytest.mark.parametrize("pid", sorted(OPTIMIZED))
def test_every_optimized_kernel_is_correct_and_beats_its_legacy_baseline(judged, pid):
    """The optimized kernels are the original system's (legacy API) steps: compared on trn1 with
    the legacy baseline they were written against."""
    fast, base = (
        judged(pid + LEGACY_SUFFIX, "optimized", "trn1"),
        judged(pid + LEGACY_SUFFIX, "baseline", "trn1"),
    )
    assert fast["status"] == "ok", fast.get("message")
    assert fast["latency_us"] < base["latency_us"]
    assert fast["latency_us"] > fast["lower_bound_us"]


def test_at_least_five_problems_have_optimized_kernels():
    assert len(OPTIMIZED) >= 5


@pytest.mark.parametrize(
    "pid", [i for s in all_specs() if s.kwargs for i in (s.id, s.id + LEGACY_SUFFIX)]
)
def test_a_baseline_given_keyword_arguments_passes_the_real_evaluator(pid):
    """The harness's keyword arguments (conv1d's padding tuple) reach the kernel through the
    tracing process's JSON request: a current-API kernel, which refuses list arguments, still
    gets the tuples the problem defines."""
    spec = spec_by_id(pid)
    verdict = asyncio.run(EmulatorEvaluator(Settings(seeds=1)).evaluate(spec, spec.baseline_code()))
    assert verdict.ok, verdict.message
