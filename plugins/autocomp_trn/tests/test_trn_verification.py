"""The verification errors of the current NKI toolchain (0.3 to 0.8), each raised with a message
that names the rule, and the simulator's default numerics. Where the trusted replay can see a
rule in the trace, a forged trace that hides it from the candidate side is refused too."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from trn_testkit import DOUBLE, HEADER, problem

from autocomp_trn import screen
from autocomp_trn.emulator import modules
from autocomp_trn.emulator.replay.state import to_int
from autocomp_trn.judge import emulate, judge
from autocomp_trn.problems.spec import Input
from autocomp_trn.runtime.trace_main import trace_source

CURRENT = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"


def kernel(body: str, out_buffer: str = "nl.shared_hbm") -> str:
    """y = 2x in the current API, with ``body`` between the load and the store."""
    return (
        CURRENT
        + f"""
@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer={out_buffer})
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
{body}
    nisa.dma_copy(out, r)
    return out
"""
    )


DOUBLING = "    nisa.tensor_scalar(r, t, nl.multiply, 2.0)"


def refused(result: dict, code: str, *words: str) -> bool:
    return result.get("code") == code and all(w in result.get("message", "") for w in words)


def test_the_honest_kernel_the_cases_start_from_is_accepted():
    assert emulate(DOUBLE, kernel(DOUBLING), generation="trn2")["status"] == "ok"


# ---------------------------------------------------------------- more than 128 partitions (0.6)


def test_more_than_128_partitions_is_a_verification_error():
    body = "    big = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)\n" + DOUBLING
    result = emulate(DOUBLE, kernel(body), generation="trn2")
    assert refused(result, "err_num_partition_exceed_arch_limit", "NKI 0.6", "256 partitions")


def test_the_replay_refuses_more_than_128_partitions_the_candidate_side_did_not_check():
    wide = problem([Input("x", (256, 512))], [((256, 512), "float32")], lambda x: (2 * x,))
    legacy = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
"""
    result = emulate(wide, HEADER + legacy, generation="trn2")
    assert refused(result, "err_num_partition_exceed_arch_limit", "exceeds", "128")


# ---------------------------------------------------------------- outputs in shared HBM (0.3)


@pytest.mark.parametrize("buffer", ["nl.hbm", "nl.private_hbm"])
def test_kernel_outputs_must_be_allocated_in_shared_hbm(buffer):
    result = emulate(DOUBLE, kernel(DOUBLING, buffer), generation="trn2")
    assert refused(result, "err_output_not_shared_hbm", "NKI 0.3", "nl.shared_hbm")


def test_legacy_kernels_keep_their_hbm_outputs():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
"""
    assert emulate(DOUBLE, HEADER + body)["status"] == "ok"


# ---------------------------------------------------------------- reshape element count (0.5)


def test_reshape_must_keep_the_element_count():
    body = "    nisa.tensor_scalar(r.reshape((128, 500)), t[:, 0:500], nl.multiply, 2.0)"
    result = emulate(DOUBLE, kernel(body), generation="trn2")
    assert refused(result, "err_reshape_element_count", "NKI 0.5", "64000", "65536")
    same_count = "    nisa.tensor_scalar(r.reshape((128, 2, 256)), t.reshape((128, 2, 256)), nl.multiply, 2.0)"
    assert emulate(DOUBLE, kernel(same_count), generation="trn2")["status"] == "ok"


# ---------------------------------------------------------------- fp8 flavours (0.4)

FP8_BODY = """    a = nl.ndarray((128, 512), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
    nisa.tensor_copy(a, t)
    b = nl.ndarray((128, 512), dtype=nl.FLAVOUR, buffer=nl.sbuf)
    nisa.tensor_copy(b, a)
    nisa.tensor_scalar(r, b, nl.multiply, 2.0)"""
FP8_SPEC = problem(
    [Input("x", (128, 512))],
    [((128, 512), "float32")],
    lambda x: (2 * x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64),),
    atol=1e-6,
    rtol=1e-6,
)


def test_the_ocp_and_the_legacy_e4m3_are_not_mixed():
    ocp_only = FP8_BODY.replace("FLAVOUR", "float8_e4m3fn")
    assert emulate(FP8_SPEC, kernel(ocp_only), generation="trn2")["status"] == "ok"
    mixed = FP8_BODY.replace("FLAVOUR", "float8_e4m3")
    result = emulate(FP8_SPEC, kernel(mixed), generation="trn2")
    assert refused(result, "err_mixed_fp8_flavours", "NKI 0.4", "float8_e4m3fn", "float8_e4m3")


def test_the_replay_refuses_an_instruction_mixing_fp8_flavours_in_a_forged_trace():
    with modules.installed("trn2"):  # trace_source installs the NKI modules for good
        status, text = trace_source(
            kernel(FP8_BODY.replace("FLAVOUR", "float8_e4m3fn")),
            "solution",
            [["x", [128, 512], "float32"]],
            {},
            "trn2",
            192 * 1024,
            100_000,
        )
    assert status["status"] == "ok", status
    trace = json.loads(text)
    allocs = [e for e in trace["events"] if e[0] == "alloc" and e[3] == "float8_e4m3fn"]
    allocs[1][3] = "float8_e4m3"  # b, which the copy from a writes: one instruction, two flavours
    result = judge(FP8_SPEC, json.dumps(trace), [11], "trn2")
    assert refused(result, "err_mixed_fp8_flavours", "tensor_copy")


# ---------------------------------------------------------------- Python the toolchain refuses (0.3)


def test_is_comparisons_are_refused_except_with_none_true_and_false():
    findings = screen.check(kernel("    flag = t is r\n" + DOUBLING))
    assert [f.rule for f in findings] == ["identity-comparison"]
    assert "NKI 0.3" in findings[0].message
    assert not screen.check(kernel("    flag = t is not None\n" + DOUBLING))
    legacy = HEADER + "def solution(x):\n    return x is x\n"
    assert not [f for f in screen.check(legacy) if f.rule == "identity-comparison"]


def test_list_arguments_to_a_current_api_kernel_are_refused():
    with_list = problem(
        [Input("x", (128, 512))],
        [((128, 512), "float32")],
        lambda x, k: (2 * x,),
        kwargs={"k": [2]},
    )
    source = kernel(DOUBLING).replace("def solution(x):", "def solution(x, k):")
    result = emulate(with_list, source, generation="trn2")
    assert refused(result, "err_list_argument", "NKI 0.3", "k is a list")
    with_tuple = problem(
        [Input("x", (128, 512))],
        [((128, 512), "float32")],
        lambda x, k: (2 * x,),
        kwargs={"k": (2,)},
    )
    assert emulate(with_tuple, source, generation="trn2")["status"] == "ok"
    defaulted = kernel(DOUBLING).replace("def solution(x):", "def solution(x, k=[2]):")
    result = emulate(DOUBLE, defaulted, generation="trn2")
    assert refused(result, "err_list_argument", "k is a list")


def test_buffers_are_the_nl_buffer_objects_not_strings():
    body = '    s = nl.ndarray((128, 512), dtype=nl.float32, buffer="sbuf")\n' + DOUBLING
    result = emulate(DOUBLE, kernel(body), generation="trn2")
    assert refused(result, "err_string_buffer", "NKI 0.3", "'sbuf'")
    like = "    s = nl.zeros_like(t)\n    e = nl.empty_like(out)\n" + DOUBLING
    assert emulate(DOUBLE, kernel(like), generation="trn2")["status"] == "ok"


# ---------------------------------------------------------------- one API per kernel


@pytest.mark.parametrize("order", ["current first", "legacy first"])
def test_a_kernel_mixing_the_current_and_the_legacy_api_is_refused(order):
    mixed = (
        kernel(DOUBLING).replace("import nki\n", "import nki\nimport neuronxcc.nki as legacy\n")
        if order == "current first"
        else "import neuronxcc.nki.language as old_nl\n" + kernel(DOUBLING)
    )
    findings = screen.check(mixed)  # the early, readable refusal
    assert [f.rule for f in findings] == ["mixed-api"]
    result = emulate(DOUBLE, mixed, generation="trn2")  # the import itself is the boundary
    assert refused(result, "err_mixed_api", "nki", "neuronxcc.nki")


def test_errors_of_the_legacy_namespace_call_it_legacy():
    body = """
@nki.jit
def solution(x):
    nl.fori_loop(0, 2, print)
"""
    result = emulate(DOUBLE, HEADER + body)
    assert refused(result, "err_unsupported_api", "neuronxcc.nki.language.fori_loop", "legacy")


# ---------------------------------------------------------------- numerics: the simulator's defaults


def test_float_to_int_casts_round_to_nearest_even_and_saturate():
    values = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.6, 300.0, -1e9, np.nan], np.float32)
    assert to_int(values, np.dtype(np.int8)).tolist() == [0, 2, 2, 0, -2, 127, 127, -128, 0]
    cast = problem(
        [Input("x", (128, 512))],
        [((128, 512), "int8")],
        lambda x: (np.clip(np.rint(x.astype(np.float32) * np.float32(100)), -128, 127),),
        atol=0.5,  # integers: any rounding difference is at least 1
        rtol=0.0,
    )
    body = """    q = nl.ndarray((128, 512), dtype=nl.int8, buffer=nl.sbuf)
    nisa.tensor_scalar(q, t, nl.multiply, 100.0)
    nisa.dma_copy(out, q)
    return out
"""
    source = (
        CURRENT
        + """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.int8, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
"""
        + body
    )
    assert emulate(cast, source, generation="trn2")["status"] == "ok"
    truncated = problem(
        [Input("x", (128, 512))],
        [((128, 512), "int8")],
        lambda x: (np.clip(np.trunc(x.astype(np.float32) * np.float32(100)), -128, 127),),
        atol=0.5,
        rtol=0.0,
    )
    assert emulate(truncated, source, generation="trn2")["status"] == "wrong_answer"


def test_bf16_stores_round_to_nearest_even_bit_exactly():
    spec = problem(
        [Input("x", (128, 512))],
        [((128, 512), "float32")],
        lambda x: (x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64),),
        atol=1e-12,
        rtol=1e-7,
    )
    body = """    b = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(b, t)
    nisa.tensor_copy(r, b)"""
    assert emulate(spec, kernel(body), generation="trn2")["status"] == "ok"
    assert emulate(spec, kernel("    nisa.tensor_copy(r, t)"), generation="trn2")["status"] == (
        "wrong_answer"
    )
