"""Idioms of the original system's published, hardware-verified NKI programs (issue 31): each is
accepted and computes the right answer, written here as our own minimal kernel; where the idiom
has a wrong twin, the twin is refused."""

from __future__ import annotations

import numpy as np
import pytest
from trn_testkit import HEADER, problem, run

from autocomp_trn.judge import emulate
from autocomp_trn.problems.catalog import spec_by_id
from autocomp_trn.problems.spec import Input
from autocomp_trn.screen import check


def screened(body: str) -> list[str]:
    return [f.rule for f in check(HEADER + body)]


# ---------------------------------------------------------------- stores through nl.ds

DS_STORE = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((nl.par_dim(128), 512), dtype=x.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(4):
        t[:, nl.ds(j * 128, 128)] = nl.multiply(nl.load(x[:, nl.ds(j * 128, 128)]), 2.0)
    nl.store(out[:, nl.ds(0, 512)], value=t)
    return out
"""


def test_a_store_through_an_nl_ds_index_is_screened_as_a_store_and_computes_right():
    assert screened(DS_STORE) == []
    assert run(DS_STORE)["status"] == "ok"


@pytest.mark.parametrize(
    "statement",
    [
        "nl.ds = lambda start, size: slice(0, 1)",
        "nl.tile_size.pmax = 64",
        "nl.tile_size.__dict__['pmax'] = 64",
        "t, nl.ds = 1, 2",
        "np.add = np.multiply",
        "nl.load.cache[0] = 1",
    ],
)
def test_assigning_to_the_nki_api_or_numpy_is_still_refused(statement):
    body = DS_STORE.replace("    for j in", f"    {statement}\n    for j in", 1)
    assert {"monkeypatch", "introspection"} & set(screened(body)), statement


# ---------------------------------------------------------------- the problems' interfaces

GEMM_ONE_TILE_PER_K = """
@nki.jit
def solution(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=OUT_DTYPE, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K_TILES):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a, b, transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=out)
    return result
"""


def _gemm(out_dtype: str, k_tiles: str = "K // 128") -> str:
    return HEADER + GEMM_ONE_TILE_PER_K.replace("OUT_DTYPE", out_dtype).replace("K_TILES", k_tiles)


def test_the_gemm_problem_returns_bf16_as_the_published_harness_does():
    spec = spec_by_id("tutorial/gemm")
    assert [dtype for _, dtype in spec.outputs] == ["bfloat16"]
    assert emulate(spec, _gemm("lhsT.dtype"))["status"] == "ok"


def test_the_gemm_output_dtype_is_still_exact_and_the_bf16_tolerance_refuses_a_missing_k_tile():
    spec = spec_by_id("tutorial/gemm")
    wider = emulate(spec, _gemm("nl.float32"))
    assert wider["status"] == "compile_error" and "expects bfloat16" in wider["message"]
    short = emulate(spec, _gemm("lhsT.dtype", "K // 128 - 1"))
    assert short["status"] == "wrong_answer", short


CONV1D_FROM_KWARGS = """
@nki.jit
def solution(img, filt, **kwargs):
    left, right = kwargs["padding"][1]
    N, C, _, W = img.shape
    out = nl.ndarray((N, C, 1, W), dtype=img.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range(C // 128):
        taps = nl.load(filt[c * 128:(c + 1) * 128, 0, 0, :])
        for n in nl.affine_range(N):
            row = nl.zeros((nl.par_dim(128), left + W + right), dtype=img.dtype)
            row[:, LOAD_AT:LOAD_AT + W] = nl.load(img[n, c * 128:(c + 1) * 128, 0, :])
            t0 = nisa.tensor_scalar(row[:, 0:W], np.multiply, taps[:, 0:1])
            t1 = nisa.tensor_scalar(row[:, 1:W + 1], np.multiply, taps[:, 1:2])
            t2 = nisa.tensor_scalar(row[:, 2:W + 2], np.multiply, taps[:, 2:3])
            acc = nisa.tensor_tensor(nisa.tensor_tensor(t0, t1, op=np.add), t2, op=np.add)
            nl.store(out[n, c * 128:(c + 1) * 128, 0, :], value=acc)
    return out
"""


def test_the_conv1d_problem_passes_its_padding_as_the_published_harness_does():
    spec = spec_by_id("advanced/conv1d")
    assert spec.kwargs == {"padding": ((0, 0), (1, 1))}
    result = emulate(spec, HEADER + CONV1D_FROM_KWARGS.replace("LOAD_AT", "left"))
    assert result["status"] == "ok", result


def test_a_conv1d_that_misplaces_the_padding_is_refused():
    spec = spec_by_id("advanced/conv1d")
    result = emulate(spec, HEADER + CONV1D_FROM_KWARGS.replace("LOAD_AT", "right - 1"))
    assert result["status"] == "wrong_answer", result


def test_the_conv1d_reference_honours_the_padding():
    img = np.arange(8.0).reshape(1, 1, 1, 8)
    filt = np.array([1.0, 10.0, 100.0]).reshape(1, 1, 1, 3)
    (same,) = spec_by_id("advanced/conv1d").reference(img, filt, padding=((0, 0), (1, 1)))
    assert same[0, 0, 0, :2].tolist() == [10.0 * 0 + 100.0 * 1, 1.0 * 0 + 10.0 * 1 + 100.0 * 2]


# ---------------------------------------------------------------- ScalarE reduce registers

ROW_EXP_SUM = problem(
    [Input("x", (128, 2048), "float32", "uniform")],
    [((128, 1), "float32")],
    lambda x: (np.exp(x).sum(axis=1, keepdims=True),),
    atol=1e-3,
    rtol=1e-4,
)

EXP_SUM_IN_REGISTERS = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    total = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(op=nl.exp, data=nl.load(x[:, 0:512]), reduce_op=nl.add, FIRST)
    for j in nl.sequential_range(2):
        block = nl.load(x[:, nl.ds((j + 1) * 512, 512)])
        nisa.activation(op=nl.exp, data=block, reduce_op=nl.add, MIDDLE)
    last = nl.load(x[:, 1536:2048])
    nisa.activation(op=nl.exp, data=last, reduce_op=nl.add, LAST, reduce_res=total)
    nl.store(out, value=total)
    return out
"""
RESET_REDUCE, REDUCE = (
    "reduce_cmd=nisa.reduce_cmd.reset_reduce",
    "reduce_cmd=nisa.reduce_cmd.reduce",
)


def _exp_sum(first: str = RESET_REDUCE, middle: str = REDUCE, last: str = REDUCE) -> dict:
    body = EXP_SUM_IN_REGISTERS.replace("FIRST", first).replace("MIDDLE", middle)
    return run(body.replace("LAST", last), ROW_EXP_SUM)


def test_reduce_cmd_accumulates_across_activations_in_the_scalar_engines_registers():
    assert _exp_sum()["status"] == "ok"


def test_a_reset_then_reductions_is_the_same_sum():
    reset_then_reduce = EXP_SUM_IN_REGISTERS.replace(
        "    nisa.activation(op=nl.exp, data=nl.load(x[:, 0:512]), reduce_op=nl.add, FIRST)",
        "    nisa.activation(op=nl.exp, data=nl.load(x[:, 0:8]), reduce_cmd=nisa.reduce_cmd.reset)\n"
        "    nisa.activation(op=nl.exp, data=nl.load(x[:, 0:512]), reduce_op=nl.add, FIRST)",
    )
    body = reset_then_reduce.replace("FIRST", REDUCE).replace("MIDDLE", REDUCE)
    assert run(body.replace("LAST", REDUCE), ROW_EXP_SUM)["status"] == "ok"


@pytest.mark.parametrize(
    "first, middle, last, why",
    [
        (REDUCE, REDUCE, REDUCE, "NaN"),  # registers never reset: their state is unknown
        (RESET_REDUCE, "reduce_cmd=nisa.reduce_cmd.idle", REDUCE, "differs"),  # blocks skipped
        (RESET_REDUCE, REDUCE, "reduce_cmd=nisa.reduce_cmd.reset_reduce", "differs"),
        (RESET_REDUCE, REDUCE, "reduce_cmd=nisa.reduce_cmd.reset", "constant"),
    ],
)
def test_a_register_sum_that_misses_blocks_or_starts_unreset_is_a_wrong_answer(
    first, middle, last, why
):
    result = _exp_sum(first, middle, last)
    assert result["status"] == "wrong_answer" and why in result["message"], result


def test_reduce_cmd_must_be_an_nisa_reduce_cmd():
    result = _exp_sum(last="reduce_cmd=2")
    assert result["status"] == "compile_error" and "nisa.reduce_cmd" in result["message"]


# ---------------------------------------------------------------- TensorE operands and transposes

X_AT_W = problem(
    [Input("x", (128, 128), "bfloat16", "uniform"), Input("w", (128, 512), "bfloat16", "uniform")],
    [((128, 512), "float32")],
    lambda x, w: (x @ w,),
    atol=1e-3,
    rtol=1e-3,
)

TRANSPOSE_FED_TO_MATMUL = """
@nki.jit
def solution(x, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xT = nisa.nc_transpose(nl.load(x), dtype=nl.bfloat16)
    acc = nisa.nc_matmul(stationary=STATIONARY, moving=nl.load(w))
    nl.store(out, value=nl.copy(acc))
    return out
"""


def test_a_v1_matmul_operand_in_psum_is_staged_through_sbuf():
    assert run(TRANSPOSE_FED_TO_MATMUL.replace("STATIONARY", "xT"), X_AT_W)["status"] == "ok"


def test_the_untransposed_operand_is_a_wrong_answer():
    body = TRANSPOSE_FED_TO_MATMUL.replace("STATIONARY", "nl.load(x)")
    assert run(body, X_AT_W)["status"] == "wrong_answer"


TRANSPOSE = problem(
    [Input("x", (128, 64))], [((64, 128), "float32")], lambda x: (x.T,), atol=1e-6, rtol=1e-6
)


def test_a_v1_vector_engine_transpose_larger_than_32x32_runs_on_tensor_engine():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nisa.nc_transpose(nl.load(x), engine=nisa.vector_engine)
    nl.store(out, value=nl.copy(t))
    return out
"""
    result = run(body, TRANSPOSE)
    assert result["status"] == "ok" and result["busy_us"]["pe"] > 0, result


def test_a_v2_vector_engine_transpose_larger_than_32x32_is_refused():
    code = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    t = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(a, x)
    nisa.nc_transpose(t, a, engine=nisa.vector_engine)
    nisa.dma_copy(out, t)
    return out
"""
    result = emulate(TRANSPOSE, code)
    assert result["status"] == "compile_error" and "limited to 32x32" in result["message"]


def test_a_numpy_scalar_constant_at_module_level_is_a_constant_but_an_array_is_host_data():
    head = "import numpy as np\n"
    for constant in (
        "EPS = np.float32(1e-6)",
        "SCALE = 1 / np.sqrt(128)",
        "NEG = np.float32(-np.log(2.0) * 3)",
        "TWO_PI = 2 * np.pi",
    ):
        assert screened(head + constant + "\n") == [], constant
    for data in (
        "ANSWER = np.ones((512, 4096), dtype=np.float32)",
        "ROW = np.float32(np.arange(8))",
        "TABLE = np.sqrt(np.linspace(0, 1, 128))",
        "X = np.float32([1.0, 2.0])",
    ):
        assert "host-compute" in screened(head + data + "\n"), data
