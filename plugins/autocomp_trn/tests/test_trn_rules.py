"""Each rule the compiler or the hardware enforces (nki.md section 4): a kernel that breaks it,
and the message the next prompt gets."""

from __future__ import annotations

import pytest
from trn_testkit import DOUBLE, MATMUL, run

from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input

DOUBLE_OK = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""


def test_an_honest_kernel_passes():
    assert run(DOUBLE_OK)["status"] == "ok"


BROKEN = {
    "partition dim over 128": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, 256), dtype=nl.float32)
    t[0:128, :] = nl.load(x[:, 0:256])
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
""",
        "compile_error",
        "Size of partition dimension 256 exceeds architecture limitation of 128",
    ),
    "matmul stationary free size over 128": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(w[:, 0:256])
    p = nisa.nc_matmul(a, nl.load(w))
    nl.store(out, value=nl.copy(p[0:128, :]))
    return out
""",
        "compile_error",
        "stationary free size 256 exceeds gemm_stationary_fmax 128",
    ),
    "matmul moving free size over 512": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    wide = nl.ndarray((128, 1024), dtype=nl.bfloat16)
    wide[:, 0:512] = nl.load(w)
    wide[:, 512:1024] = nl.load(w)
    p = nisa.nc_matmul(nl.load(xT), wide)
    nl.store(out, value=nl.copy(p[:, 0:512]))
    return out
""",
        "compile_error",
        "moving free size 1024 exceeds gemm_moving_fmax 512",
    ),
    "matmul output across two PSUM banks": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
    acc[:, 256:768] += nisa.nc_matmul(nl.load(xT), nl.load(w))
    nl.store(out, value=nl.copy(acc[:, 256:768]))
    return out
""",
        "compile_error",
        "must fit one 2 KiB PSUM bank",
    ),
    "SBUF tile over a partition's capacity": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.ndarray((128, 52000), dtype=nl.float32)
    big[:, 0:512] = nl.load(x)
    nl.store(out, value=nl.multiply(big[:, 0:512], 2.0))
    return out
""",
        "compile_error",
        "exceeds the 192 KiB per partition of SBUF on trn1",
    ),
    "PSUM tile over capacity": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.zeros((128, 8192), nl.float32, buffer=nl.psum)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
""",
        "compile_error",
        "exceeds the 16 KiB per partition of PSUM",
    ),
    # v2 (explicit destinations): v1 stages a PSUM operand through SBUF as the compiler does
    "TensorE reads SBUF only": (
        """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(a, xT)
    nisa.dma_copy(b, w)
    p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    q = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(p, a, b)
    nisa.nc_matmul(q, a, p)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(res, q)
    nisa.dma_copy(out, res)
    return out
""",
        "compile_error",
        "matmul moving is in PSUM: TensorE reads SBUF only",
    ),
    "TensorE writes PSUM only": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((128, 512), dtype=nl.float32)
    res[...] = nisa.nc_matmul(nl.load(xT), nl.load(w))
    nl.store(out, value=res)
    return out
""",
        "ok",
        "",
    ),
    "compute on an HBM tensor": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(x, 2.0))
    return out
""",
        "compile_error",
        "is in HBM: compute instructions read SBUF/PSUM only",
    ),
    "load from SBUF": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.load(t))
    return out
""",
        "compile_error",
        "nl.load reads an HBM tensor",
    ),
    "output left in SBUF": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype)
    out[...] = nl.multiply(nl.load(x), 2.0)
    return out
""",
        "compile_error",
        "must return whole HBM tensors",
    ),
    "fp32 mixed with bf16 in a matmul": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nisa.nc_matmul(nl.load(xT, dtype=nl.float32), nl.load(w))
    nl.store(out, value=nl.copy(p))
    return out
""",
        "compile_error",
        "mix fp32 with 8/16-bit types",
    ),
    "bitwise op on floats": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_tensor(t, t, op=nl.bitwise_and))
    return out
""",
        "compile_error",
        "bitwise_and needs integer operands",
    ),
    "mask that is not affine": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    t = nl.load(x, mask=(i_p % 2 < 1))
    nl.store(out, value=t)
    return out
""",
        "compile_error",
        "index expressions must be affine",
    ),
    "mask coupling two axes": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    nl.store(out, value=nl.multiply(nl.load(x[i_p, i_f], mask=(i_p < i_f)), 2.0))
    return out
""",
        "compile_error",
        "each mask comparison may involve one tile axis",
    ),
    "carried dependency in affine_range": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 128), dtype=nl.float32)
    for j in nl.affine_range(4):
        acc[...] = nl.add(acc, nl.load(x[:, j * 128:(j + 1) * 128]))
        nl.store(out[:, j * 128:(j + 1) * 128], value=nl.multiply(acc, 2.0))
    return out
""",
        "compile_error",
        "reads sbuf tensor [128, 128] data written by another iteration",
    ),
    "two affine iterations writing the same elements": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32)
    for j in nl.affine_range(4):
        t[...] = nl.multiply(nl.load(x), 2.0)
    nl.store(out, value=t)
    return out
""",
        "compile_error",
        "different iterations write the same elements",
    ),
    "reading uninitialized SBUF": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32)
    t[:, 0:256] = nl.load(x[:, 0:256])
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
""",
        "wrong_answer",
        "NaN/Inf values (first at [0, 256], on random input 1",
    ),
    "accumulating into an unzeroed PSUM tile": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nl.load(xT), nl.load(w))
    nl.store(out, value=nl.copy(acc))
    return out
""",
        "wrong_answer",
        "NaN/Inf",
    ),
    "output never written": (
        """
@nki.jit
def solution(x):
    return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
""",
        "compile_error",
        "is never written",
    ),
    "tile used outside the loop that made it": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(2):
        t = nl.load(x)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
""",
        "compile_error",
        "is used outside the loop body that created it",
    ),
    "writing an input": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.multiply(nl.load(x), 2.0)
    nl.store(x, value=t)
    nl.store(out, value=t)
    return out
""",
        "compile_error",
        "kernel inputs are immutable",
    ),
    "control flow on a tile": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    if t:
        nl.store(out, value=t)
    return out
""",
        "compile_error",
        "the truth value of a tile is ambiguous",
    ),
    "reduction over the partition axis": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nisa.tensor_reduce(np.add, t, axis=(0,))
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
""",
        "compile_error",
        "free axes only",
    ),
    "GpSimd touching PSUM": (
        """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nisa.nc_matmul(nl.load(xT), nl.load(w))
    nl.store(out, value=nisa.tensor_copy(p, engine=nisa.gpsimd_engine))
    return out
""",
        "compile_error",
        "GpSimd cannot access PSUM",
    ),
    "kernel with a Python error": (
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), undefined_scale))
    return out
""",
        "compile_error",
        "NameError: name 'undefined_scale' is not defined",
    ),
}

MATMUL_CASES = {
    "matmul stationary free size over 128",
    "matmul moving free size over 512",
    "matmul output across two PSUM banks",
    "TensorE reads SBUF only",
    "TensorE writes PSUM only",
    "fp32 mixed with bf16 in a matmul",
    "accumulating into an unzeroed PSUM tile",
    "GpSimd touching PSUM",
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_rule_refuses_the_kernel_that_breaks_it(name):
    body, status, words = BROKEN[name]
    spec = MATMUL if name in MATMUL_CASES else DOUBLE
    # a current-API body brings its own imports: the legacy header would mix the two APIs
    result = emulate(spec, body) if "\nimport nki\n" in body else run(body, spec)
    assert result["status"] == status, (name, result)
    assert words in result.get("message", ""), (name, result.get("message"))


def test_sbuf_capacity_follows_the_generation():
    body = BROKEN["SBUF tile over a partition's capacity"][0].replace("52000", "50000")  # 195 KiB
    assert "192 KiB" in run(body, DOUBLE, "trn1")["message"]
    assert run(body, DOUBLE, "trn2")["status"] == "ok"


def test_sequential_range_may_carry_what_affine_range_may_not():
    body = BROKEN["carried dependency in affine_range"][0].replace(
        "affine_range", "sequential_range"
    )
    spec = DOUBLE.__class__(**{**DOUBLE.__dict__, "reference": _running_double})
    assert run(body, spec)["status"] == "ok"


def _running_double(x):
    import numpy as np

    blocks = np.cumsum(x.reshape(128, 4, 128), axis=1).reshape(128, 512)
    return (2 * blocks,)


def test_plus_equals_accumulation_crosses_affine_iterations():
    body = """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        acc += nisa.nc_matmul(nl.load(xT), nl.load(w))
    nl.store(out, value=nl.copy(acc))
    return out
"""
    spec = MATMUL.__class__(**{**MATMUL.__dict__, "reference": lambda xT, w: (2 * (xT.T @ w),)})
    assert run(body, spec)["status"] == "ok"


def test_a_tail_mask_limits_every_operand():
    spec = DOUBLE.__class__(
        **{
            **DOUBLE.__dict__,
            "inputs": [Input("x", (200, 512))],
            "outputs": [((200, 512), "float32")],
        }
    )
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    for i in nl.affine_range(2):
        t = nl.load(x[i * 128 + i_p, i_f], mask=(i * 128 + i_p < 200))
        nl.store(out[i * 128 + i_p, i_f], value=nl.multiply(t, 2.0), mask=(i * 128 + i_p < 200))
    return out
"""
    assert run(body, spec)["status"] == "ok"
