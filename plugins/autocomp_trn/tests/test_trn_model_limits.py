"""The feedback states the cost model's known limits where they matter for the program at hand
(model_limits.py), and the evaluation records them in verification["model_limits"].

Each limit is shown firing on a small kernel of the idiom it is about and staying quiet on the
same kernel without it; the feedback and the record are checked through the backend's whole
sandboxed evaluation."""

from __future__ import annotations

import pytest
from autocomp_core import EvalContext, EvalResult
from test_trn_cost import EXP_SUM, SUM_SPEC, WIDE, ops, window, window_spec
from trn_testkit import DOUBLE, run

from autocomp_trn import model_limits
from autocomp_trn.backend import TrnBackend

SECTION = "Model limits that apply to this program"
BACKEND = TrnBackend({"mode": "emulator", "generation": "trn1"}, {"seeds": 1})


def names(body: str, spec=DOUBLE, **kw) -> list[str]:
    result = run(body, spec, numeric=False, **kw)
    assert result["status"] == "ok", result
    return [item["limit"] for item in result["model_limits"]]


async def evaluate(problem_id: str) -> EvalResult:
    problem = BACKEND.load_problem(problem_id)
    result = await BACKEND.evaluate(problem, problem.baseline_code, EvalContext(seed=1))
    assert result.correct, result.feedback
    return result


@pytest.mark.asyncio
async def test_the_recorded_list_and_the_feedback_say_the_same():
    # the legacy rmsnorm baseline (trn1) moves its data in and out ([1, 4096] rows of g per
    # tile) and its squares' sum is merged into the activation; the mamba baseline hits no limit
    rmsnorm = await evaluate("tutorial/rmsnorm@legacy")
    limits = rmsnorm.verification["model_limits"]
    assert [item["limit"] for item in limits] == ["dma_queues", "compiler_merges"]
    section = rmsnorm.feedback[rmsnorm.feedback.index(SECTION) :].splitlines()
    assert section[1:] == [f"- {item['detail']}" for item in limits]
    assert rmsnorm.verification["seeds"] and rmsnorm.verification["checks"]
    mamba = await evaluate("tutorial/mamba@legacy")
    assert mamba.verification["model_limits"] == [] and SECTION not in mamba.feedback


def test_tiny_instructions_at_the_floor():
    assert "instruction_floor" in names(ops(400, 3))
    assert "instruction_floor" not in names(ops(400, 512))


def test_loops_priced_as_vectorized_and_loops_over_the_limit():
    assert "loop_vectorization" in names(window(128, blocks=2), window_spec(128))
    over = run(window(256), window_spec(256), numeric=False)["model_limits"]
    assert [item["limit"] for item in over] == ["instruction_floor", "loop_vectorization"]
    assert "exceed the limit" in over[1]["detail"]
    # the same work as one instruction per iteration that nothing could fuse: no such limit
    assert "loop_vectorization" not in names(
        window(128, "static_range", blocks=2), window_spec(128)
    )


def test_element_granular_dma():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(4):
        t = nl.LOAD(x[:, j * 128:(j + 1) * 128])
        nl.store(out[:, j * 128:(j + 1) * 128], value=nl.copy(t))
    return out
"""
    assert "element_granular_dma" in names(body.replace("LOAD", "load_transpose2d"))
    assert "element_granular_dma" not in names(body.replace("LOAD", "load"))


def test_dma_bound_programs():
    copy = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(16):
        t = nl.load(x[:, j * 128:(j + 1) * 128])
        nl.store(out[:, j * 128:(j + 1) * 128], value=nl.multiply(t, 2.0))
    return out
"""
    assert "dma_queues" in names(copy, WIDE)
    # the same moves with VectorE kept busy by tiny instructions: no longer bound by the DMAs
    busy = copy.replace(
        "    return out",
        "    for k in nl.static_range(4000):\n"
        "        u = nisa.tensor_scalar(t0[:, 0:3], np.multiply, 1.0)\n    return out",
    ).replace("    for j in", "    t0 = nl.load(x[:, 0:128])\n    for j in", 1)
    assert "dma_queues" not in names(busy, WIDE)


def test_assumed_compiler_merges():
    split = EXP_SUM.replace(
        "BODY",
        "e = nisa.activation(nl.exp, data=t)\n    s = nisa.tensor_reduce(np.add, data=e, axis=(1,))",
    )
    explicit = EXP_SUM.replace(
        "BODY",
        "s = nl.ndarray((128, 1), dtype=nl.float32)\n"
        "    e = nisa.activation_reduce(nl.exp, data=t, reduce_op=np.add, reduce_res=s)",
    )
    merged = run(split, SUM_SPEC, numeric=False)["model_limits"]
    assert [item["limit"] for item in merged] == ["compiler_merges"]
    assert "activation-with-reduce" in merged[0]["detail"]
    assert "compiler_merges" not in names(explicit, SUM_SPEC)


def test_vector_and_gpsimd_share_a_timeline():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for k in nl.static_range(8):
        u = nisa.tensor_tensor(t, t, op=np.add, engine=ENGINE)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""
    assert "shared_sbuf_port" in names(body.replace("ENGINE", "nisa.gpsimd_engine"))
    assert "shared_sbuf_port" not in names(body.replace("ENGINE", "nisa.vector_engine"))
    # Trn2's engines do not share the port
    assert "shared_sbuf_port" not in names(
        body.replace("ENGINE", "nisa.gpsimd_engine"), generation="trn2"
    )


def test_the_section_is_one_line_per_limit():
    assert model_limits.section([]) == ""
    text = model_limits.section([{"limit": "a", "detail": "one"}, {"limit": "b", "detail": "two"}])
    assert text.splitlines()[1:] == ["- one", "- two"] and text.startswith(SECTION)
