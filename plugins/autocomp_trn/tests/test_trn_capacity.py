"""The schedule overlaps only what fits in SBUF (issue 33 red team, a06 and a08): a tile declared
in a loop is a fresh buffer each iteration, but the allocator can hold only as many copies as fit
beside everything else live, so a load into a copy waits for the tenant it replaces; under NKI
allocation a ``split_reused_buffers`` second buffer must fit too, else NKI's allocation fails and
the kernel compiles with neuronx-cc's (``nki_alloc_fallback``, on by default) or is refused.
Kernels run through the real tracing code and the trusted replay (``emulator/replay/memory.py``)."""

from __future__ import annotations

import pytest
from trn_testkit import problem

from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input

HEADER = (
    "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
    "from nki.compiler import Allocation, CompileConfig\n\n\n"
)
N = 8  # loop iterations


def gated(width: int):
    """y = x, chunk by chunk, each chunk scaled by exp(0 * s) (= 1) after a long ScalarE chain
    that the loop waits for: its loads may run ahead of the chain only as far as SBUF holds."""
    return problem(
        [Input("x", (128, N * width)), Input("s", (128, 32768), "bfloat16")],
        [((128, N * width), "float32")],
        lambda x, s: (x,),
    )


def gated_kernel(width: int, ring: bool, config: str = "") -> str:
    """``ring``: three chunk buffers allocated before the loop and taken in turn; else a fresh
    chunk tile each iteration. The chain's tile holds 64 KiB per partition throughout."""
    alloc = "nl.ndarray((128, W), dtype=nl.float32, buffer=nl.sbuf)"
    hoisted = f"    bufs = [{alloc} for _ in range(3)]\n" if ring else ""
    decorator = f"@nki.jit(compile_config=CompileConfig({config}))" if config else "@nki.jit"
    return (
        HEADER
        + f"""
{decorator}
def solution(x, s):
    W = {width}
    out = nl.ndarray((128, {N} * W), dtype=nl.float32, buffer=nl.shared_hbm)
    g = nl.ndarray((128, 32768), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=s)
    for r in range(8):
        nisa.activation(dst=g, op=nl.exp, data=g, scale=0.0)
{hoisted}    for j in range({N}):
        t = {"bufs[j % 3]" if ring else alloc}
        nisa.dma_copy(dst=t, src=x[:, j * W:(j + 1) * W])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=g[:, 0:1])
        nisa.dma_copy(dst=out[:, j * W:(j + 1) * W], src=t)
    return out
"""
    )


def latency(spec, code: str) -> float:
    verdict = emulate(spec, code, seeds=[5], generation="trn2")
    assert verdict["status"] == "ok", verdict.get("message")
    return verdict["latency_us"]


@pytest.mark.parametrize("config", ["", "allocation=Allocation.LINEAR, prefetch_auto=True"])
def test_fresh_tiles_overlap_only_as_many_iterations_as_fit(config):
    """48 KiB chunks: beside the chain's 64 KiB, three fit in trn2's 224 KiB per partition, so
    fresh tiles are priced as a ring of three buffers (before: every load ran ahead of the chain,
    471.47 modelled us against the ring's 668.08)."""
    big = gated(12288)
    fresh = latency(big, gated_kernel(12288, ring=False, config=config))
    assert fresh >= latency(big, gated_kernel(12288, ring=True))


def test_fresh_tiles_that_fit_still_overlap_deeper_than_a_ring_of_three():
    """8 KiB chunks: all eight fit, so fresh tiles let every load run ahead of the chain."""
    small = gated(2048)
    assert latency(small, gated_kernel(2048, ring=False)) < latency(
        small, gated_kernel(2048, ring=True)
    )


SWIGLU_16K = (
    HEADER
    + """
{decorator}
def solution(a, b):
    R, C = a.shape
    out = nl.ndarray((R, C), dtype=a.dtype, buffer=nl.shared_hbm)
    F = R * C // 128
    av, bv, ov = a.reshape((128, F)), b.reshape((128, F)), out.reshape((128, F))
    W = {width}
    a_t = nl.ndarray((128, W), dtype=a.dtype, buffer=nl.sbuf)
    b_t = nl.ndarray((128, W), dtype=b.dtype, buffer=nl.sbuf)
    for j in range(F // W):
        nisa.dma_copy(dst=a_t, src=av[:, j * W:(j + 1) * W])
        nisa.dma_copy(dst=b_t, src=bv[:, j * W:(j + 1) * W])
        nisa.activation(dst=a_t, op=nl.silu, data=a_t)
        nisa.tensor_tensor(dst=a_t, data1=a_t, data2=b_t, op=nl.multiply)
        nisa.dma_copy(dst=ov[:, j * W:(j + 1) * W], src=a_t)
    return out
"""
)
SPLIT = "allocation=Allocation.LINEAR, split_reused_buffers=True"


def swiglu(width: int, config: str = "") -> str:
    decorator = f"@nki.jit(compile_config=CompileConfig({config}))" if config else "@nki.jit"
    return SWIGLU_16K.format(decorator=decorator, width=width)


def _swiglu_verdict(code: str) -> dict:
    from autocomp_trn.problems.catalog import spec_by_id

    return emulate(spec_by_id("pytorch/swiglu"), code, seeds=[5], generation="trn2")


def test_a_split_ring_beyond_sbuf_falls_back_to_neuronx_cc_allocation():
    """Two reused 64 KiB buffers, split: 256 KiB per partition, over trn2's 224 KiB. NKI's
    allocation fails and the kernel is priced as neuronx-cc allocates it (the same kernel
    without the config), not with the two buffers it has no room for (256.41 us before,
    277.34 without the option); the feedback says why."""
    split = _swiglu_verdict(swiglu(16384, SPLIT))
    plain = _swiglu_verdict(swiglu(16384))
    assert split["status"] == plain["status"] == "ok"
    assert split["latency_us"] == pytest.approx(plain["latency_us"])
    assert "NKI allocation is out of SBUF memory" in split["summary"]
    assert "nki_alloc_fallback" in split["summary"]


def test_a_split_ring_that_fits_keeps_its_overlap():
    """16 KiB buffers: the ring fits (64 KiB), and the split still pays."""
    split = _swiglu_verdict(swiglu(4096, SPLIT))
    plain = _swiglu_verdict(swiglu(4096))
    assert split["status"] == "ok"
    assert split["latency_us"] < plain["latency_us"]
    assert "out of SBUF" not in split["summary"]


def test_without_the_fallback_a_split_ring_beyond_sbuf_is_refused_in_one_line():
    verdict = _swiglu_verdict(swiglu(16384, SPLIT + ", nki_alloc_fallback=False"))
    assert verdict["status"] == "compile_error", verdict
    message = verdict["message"]
    assert "NKI allocation is out of SBUF memory" in message and "\n" not in message
    assert "largest live tensor" in message and "nki_alloc_fallback=False" in message
