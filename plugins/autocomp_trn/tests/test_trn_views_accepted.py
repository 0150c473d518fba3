"""Honest current-API kernels built on documented NKI views and indexing idioms: each must be
accepted and give the right answer, and each nearby rule the real toolchain enforces is refused
with an error that names it. (An honest program refused is a validity defect too.)"""

from __future__ import annotations

from trn_testkit import problem

from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input

CURRENT = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

#: y = 2x over a [128, 1024] input, the problem most kernels below solve in different ways
DOUBLE_WIDE = problem([Input("x", (128, 1024))], [((128, 1024), "float32")], lambda x: (2 * x,))


def run(body: str, spec=DOUBLE_WIDE, generation: str = "trn2") -> dict:
    return emulate(spec, CURRENT + body, generation=generation)


def accepted(result: dict) -> bool:
    return result.get("status") == "ok"


def refused(result: dict, code: str, *words: str) -> bool:
    return result.get("code") == code and all(w in result.get("message", "") for w in words)


# ---------------------------------------------------------------- reshape of a strided view (a16)

RESHAPE_OF_COLUMN_SLICES = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    wide = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for j in range(4):
        c0 = j * 256
        # a column slice of HBM and of a wider SBUF tile, both split into (8, 32) by reshape
        nisa.dma_copy(dst=wide[:, 0:256].reshape((128, 8, 32)),
                      src=x[:, c0:c0 + 256].reshape((128, 8, 32)))
        nisa.tensor_scalar(wide[:, 256:512], wide[:, 0:256], nl.multiply, 2.0)
        nisa.dma_copy(dst=out[:, c0:c0 + 256].reshape((128, 8, 32)),
                      src=wide[:, 256:512].reshape((128, 8, 32)))
    return out
"""


def test_reshape_of_a_column_sliced_view_is_a_view_and_is_accepted():
    assert accepted(run(RESHAPE_OF_COLUMN_SLICES))


def test_reshape_of_a_strided_view_agrees_with_reshape_dim():
    same = RESHAPE_OF_COLUMN_SLICES.replace(".reshape((128, 8, 32))", ".reshape_dim(1, (8, 32))")
    a, b = run(RESHAPE_OF_COLUMN_SLICES), run(same)
    assert accepted(a) and accepted(b)
    assert a["latency_us"] == b["latency_us"]


# the elements 0, 2, 4, ... of each row, reshaped (8, 64): a stepped slice splits as a view too
STEPPED = problem(
    [Input("x", (128, 1024))],
    [((128, 8, 64), "float32")],
    lambda x: (x[:, ::2].reshape(128, 8, 64),),
)


def test_reshape_of_a_stepped_slice_reads_the_right_elements():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 8, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, 0:1024:2].reshape((128, 8, 64)))
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    assert accepted(run(body, STEPPED))


def test_reshape_that_merges_dims_not_contiguous_in_storage_is_refused():
    # rows of a column slice are 1024 apart: (128, 256) cannot become (64, 512) without a copy
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, 0:256].reshape((64, 512)))
    return out
"""
    assert refused(run(body), "err_reshape_not_a_view", "not contiguous", "[64, 512]")


def test_reshape_of_a_strided_on_chip_view_keeps_its_partition_dim():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:256].reshape((2, 64, 256)), src=x[:, 0:256].reshape((2, 64, 256)))
    return out
"""
    assert refused(run(body), "err_partition_dim_view", "partition dimension")


# ---------------------------------------------------------------- dma_copy(priority=...)


def prioritized(priority: str) -> str:
    return f"""
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, priority={priority})
    nisa.tensor_scalar(t, t, nl.multiply, 2.0)
    nisa.dma_copy(out, t)
    return out
"""


def test_dma_priority_is_accepted_on_trn3_and_costs_nothing_extra():
    with_priority, without = (
        run(prioritized("1"), generation="trn3"),
        run(prioritized("None"), generation="trn3"),
    )
    assert accepted(with_priority) and accepted(without)
    assert with_priority["latency_us"] == without["latency_us"]  # no documented effect


def test_dma_priority_is_refused_on_a_core_without_it():
    assert refused(
        run(prioritized("1")), "err_unsupported_on_generation", "priority", "NeuronCore-v4"
    )
    assert accepted(run(prioritized("None")))  # the default is no request at all


def test_dma_transpose_takes_priority_on_trn3_only():
    spec = problem(
        [Input("x", (128, 128), "bfloat16")], [((128, 128), "bfloat16")], lambda x: (x.T,)
    )
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(t, x, priority=2)
    nisa.dma_copy(out, t)
    return out
"""
    assert accepted(run(body, spec, generation="trn3"))
    assert refused(run(body, spec), "err_unsupported_on_generation", "dma_transpose")
