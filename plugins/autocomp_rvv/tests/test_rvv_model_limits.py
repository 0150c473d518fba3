"""The feedback states the cycle model's known limits where they matter for the kernel at hand
(model_limits.py), and the evaluation records them in verification["model_limits"].

Each limit fires on one real kernel and stays quiet on another, through the whole evaluator
(clang, qemu-user, Spike, the cycle model); the detectors' edges are pinned on hand-made
instruction streams."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from autocomp_rvv import model_limits
from autocomp_rvv.backend import RvvBackend
from autocomp_rvv.costmodel import CORE_PRESETS, model_cycles
from autocomp_rvv.trace import Insn

from autocomp_core import EvalContext, EvalResult

CANDIDATES = Path(__file__).parent / "candidates"
SECTION = "Model limits that apply to this program"
SATURN = CORE_PRESETS["saturn"]
K230 = CORE_PRESETS["k230"]


def names(result: EvalResult) -> list[str]:
    return [item["limit"] for item in result.verification["model_limits"]]


@pytest.fixture(scope="module")
def evaluated() -> dict[str, EvalResult]:
    """Three kernels: vadd through a vector-stored scratch array (own candidate), the plain
    vectorized vadd (memory-bound), the vectorized gemm (its scalar loop control dominates)."""
    backend = RvvBackend()

    async def run(problem_id: str, candidate: str) -> EvalResult:
        problem = backend.load_problem(problem_id)
        code = (CANDIDATES / candidate).read_text()
        return await backend.evaluate(problem, code, EvalContext(seed=1, timeout_s=120))

    async def all_three():
        return await asyncio.gather(
            run("vadd_f32", "vadd_f32_vector_scratch.c"),
            run("vadd_f32", "vadd_f32_rvv.c"),
            run("gemm_f32", "gemm_f32_rvv.c"),
        )

    scratch, vadd, gemm = asyncio.run(all_three())
    for result in (scratch, vadd, gemm):
        assert result.correct, result.feedback
    return {"scratch": scratch, "vadd": vadd, "gemm": gemm}


def test_feedback_and_record_agree(evaluated):
    for result in evaluated.values():
        limits = result.verification["model_limits"]
        assert limits, result.feedback
        section = result.feedback[result.feedback.index(SECTION) :].splitlines()
        assert section[1:] == [f"- {item['detail']}" for item in limits]
        assert result.verification["checks"]  # beside what the verdict rests on


def test_memory_hits_only(evaluated):
    assert "memory_hits_only" in names(evaluated["vadd"])
    assert "the vector load pipe is busy" in evaluated["vadd"].feedback
    assert "cache misses, memory latency and DRAM bandwidth are not modelled" in (
        evaluated["vadd"].feedback
    )
    assert "memory_hits_only" not in names(evaluated["gemm"])
    assert "- memory:" not in evaluated["gemm"].feedback


def test_scalar_flat_cost(evaluated):
    assert "scalar_flat_cost" in names(evaluated["gemm"])
    assert "no load-use latency, cache miss or branch misprediction" in evaluated["gemm"].feedback
    assert "scalar_flat_cost" not in names(evaluated["vadd"])
    assert "scalar code:" not in evaluated["vadd"].feedback


def test_memory_order(evaluated):
    # vadd_f32's benchmark has 3001 elements: 94 chunks of VLMAX = 32 (VLEN 256, e32m4), each
    # reloaded from the scratch array it was just stored to
    scratch = evaluated["scratch"]
    assert "memory_order" in names(scratch)
    assert "94 vector loads read memory an earlier vector store of the call wrote" in (
        scratch.feedback
    )
    assert "memory_order" not in names(evaluated["vadd"])
    assert "memory order:" not in evaluated["vadd"].feedback


# ---------------------------------------------------------------- the detectors' edges


def vec(mnemonic: str, operands: str, addrs: list[int], stores: bool = False) -> Insn:
    insn = Insn(0, mnemonic, operands, sew=32, lmul=1.0, vl=len(addrs), mem_addrs=list(addrs))
    if stores:
        insn.stores = tuple((a, bytes(4)) for a in addrs)
    return insn


def limits_of(insns: list[Insn], core=SATURN) -> list[str]:
    report = model_cycles(insns, core)
    return [item["limit"] for item in model_limits.applying(insns, report, core)]


def test_memory_order_needs_a_load_of_stored_words_on_a_decoupled_core():
    words = [0x1000 + 4 * i for i in range(4)]
    store = vec("vse32.v", "v8, (a0)", words, stores=True)
    reload = vec("vle32.v", "v16, (a0)", words)
    elsewhere = vec("vle32.v", "v16, (a1)", [0x2000 + 4 * i for i in range(4)])
    assert "memory_order" in limits_of([store, reload])
    assert "memory_order" not in limits_of([reload, store])  # the load came first
    assert "memory_order" not in limits_of([store, elsewhere])
    # on the coupled (K230-like) core each vector instruction leaves its pipe before the next
    assert "memory_order" not in limits_of([store, reload], K230)


def test_scalar_flat_cost_is_a_share_of_the_modelled_cycles():
    loop = [Insn(0, "lw", "a1, 0(a0)"), Insn(0, "addi", "a0, a0, 4"), Insn(0, "bnez", "a2, x")]
    assert limits_of(loop * 10) == ["scalar_flat_cost"]
    # one long vector divide makes the same scalar instructions a small share of the time
    divide = Insn(0, "vfdiv.vv", "v8, v8, v16", sew=32, lmul=8.0, vl=64)
    assert "scalar_flat_cost" not in limits_of([*loop, divide])
