"""The Llama blocks: their float64 references agree with their PyTorch sources, their current-API
translations (kernels.TRANSLATED) are correct on Trn2 and Trn3, and the tolerances refuse a
translation that gets the math wrong."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from autocomp_trn.judge import emulate
from autocomp_trn.kernels import TRANSLATED, translated_source
from autocomp_trn.problems.catalog import llama, spec_by_id
from autocomp_trn.problems.spec import Input

LLAMA_IDS = [s.id for s in llama()]


def _small(spec) -> list[Input]:
    """The problem's inputs with every dimension of 64 or more cut to a quarter (at least 16)."""
    return [
        dataclasses.replace(i, shape=tuple(max(16, n // 4) if n >= 64 else n for n in i.shape))
        for i in spec.inputs
    ]


def _torch_model(spec):
    namespace: dict = {"__name__": "llama_source"}
    exec(compile(spec.baseline_code(), spec.baseline, "exec"), namespace)
    return namespace["Model"]()


@pytest.mark.parametrize("pid", LLAMA_IDS)
def test_the_reference_agrees_with_the_pytorch_source_on_small_shapes(pid):
    spec = spec_by_id(pid)
    assert spec.language == "pytorch"
    rng = np.random.default_rng(3)
    args = [i.draw(rng).astype(np.float64) for i in _small(spec)]
    with torch.no_grad():
        want = _torch_model(spec)(*[torch.from_numpy(a) for a in args]).numpy()
    (got,) = spec.reference(*args)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_the_attention_reference_masks_and_groups_its_heads():
    """A query head reads only its own key/value head, and a masked cached key weighs nothing."""
    spec = spec_by_id("llama/attention")
    q, ka, va, kp, vp, mask = (np.zeros(i.shape) for i in spec.inputs)
    vp[0, 1] = 1.0  # cached values of kv head 1 only
    mask[..., 0] = 1  # one cached key visible, with a score equal to the active key's
    (out,) = spec.reference(q, ka, va, kp, vp, mask)
    # heads 4..7 read kv head 1: half the weight on its cached value 1, half on the active 0
    assert (
        np.allclose(out[0, 4:8], 0.5) and np.allclose(out[0, :4], 0) and np.allclose(out[0, 8:], 0)
    )


@pytest.mark.slow
@pytest.mark.parametrize("generation", ["trn2", "trn3"])
@pytest.mark.parametrize("pid", sorted(TRANSLATED))
def test_every_llama_translation_is_correct_and_above_its_lower_bound(pid, generation):
    verdict = emulate(spec_by_id(pid), translated_source(pid), seeds=[1, 2], generation=generation)
    assert verdict["status"] == "ok", verdict.get("message")
    assert verdict["latency_us"] > verdict["lower_bound_us"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("pid", [s.id for s in llama() if s.full_inputs is not None])
def test_the_reduced_blocks_trace_at_the_original_shapes(pid):
    """``<id>@full`` (the original system's shapes, trace-only): the translation traces and is
    costed there, above the bound of the larger problem."""
    full = spec_by_id(pid + "@full")
    assert full.inputs == spec_by_id(pid).full_inputs
    verdict = emulate(full, translated_source(pid), seeds=[1], generation="trn2", numeric=False)
    assert verdict["status"] == "ok", verdict.get("message")
    assert verdict["latency_us"] > verdict["lower_bound_us"] > 0


def test_every_llama_block_has_a_translation():
    assert set(TRANSLATED) == set(LLAMA_IDS)


@pytest.mark.parametrize(
    "pid, edit",
    [
        ("llama/mlp_decode_b1", ("op=nl.silu", "op=nl.sigmoid")),  # the gate's activation
        ("llama/mlp_prefill", ("operand1=1e-5", "operand1=1.0")),  # the RMSNorm's epsilon
        ("llama/attention", ("operand1=30000.0", "operand1=0.0")),  # the mask ignored
    ],
)
def test_the_tolerances_refuse_a_translation_with_the_math_wrong(pid, edit):
    source = translated_source(pid)
    assert edit[0] in source
    verdict = emulate(spec_by_id(pid), source.replace(*edit), seeds=[1], generation="trn2")
    assert verdict["status"] == "wrong_answer", verdict
