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


# ---------------------------------------------------------------- documented view and index idioms


def doubled(load: str, store: str = "nisa.dma_copy(dst=out, src=t)") -> str:
    """y = 2x with ``load`` filling the [128, 1024] SBUF tile t from x, and ``store`` writing out."""
    return f"""
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    {load}
    nisa.tensor_scalar(t, t, nl.multiply, 2.0)
    {store}
    return out
"""


IDIOMS = {
    # nl.ds(start, size) is the slice start:start+size
    "ds": "for j in range(2):\n        nisa.dma_copy(dst=t[:, nl.ds(j * 512, 512)], src=x[:, nl.ds(j * 512, 512)])",
    # a raw access pattern on the tensor: rows 1024 apart, 1024 contiguous columns
    "ap": "nisa.dma_copy(dst=t.ap([[1024, 128], [1, 1024]], 0), src=x.ap([[1024, 128], [1, 1024]], 0))",
    # the same copy in two halves through ap offsets
    "ap offset": "for h in range(2):\n        nisa.dma_copy(dst=t.ap(pattern=[[1024, 128], [1, 512]], offset=h * 512), src=x.ap(pattern=[[1024, 128], [1, 512]], offset=h * 512))",
    # // and % of Python loop indices pick the column block (kernels run as Python since 0.7)
    "floordiv mod": "for j in range(4):\n        c = (j // 2) * 512 + (j % 2) * 256\n        nisa.dma_copy(dst=t[:, c:c + 256], src=x[:, c:c + 256])",
    # slice / reshape_dim / flatten_dims on HBM, composed
    "view chain": "nisa.dma_copy(dst=t, src=x.slice(1, 0, 1024).reshape_dim(1, (4, 256)).flatten_dims(1, 2))",
    # permute twice is the identity view; rearrange names the same permutation
    "permute": "nisa.dma_copy(dst=t.reshape((128, 4, 256)), src=x.reshape((128, 4, 256)).permute((0, 2, 1)).rearrange('p a b -> p b a'))",
    # a select of a 3-D HBM view drops the dim
    "select": "for k in range(2):\n        nisa.dma_copy(dst=t[:, k * 512:(k + 1) * 512], src=x.reshape((128, 2, 512)).select(1, k))",
    # an Ellipsis subscript is the whole tensor
    "ellipsis": "nisa.dma_copy(dst=t[...], src=x[...])",
}


def test_each_documented_idiom_is_accepted_and_right():
    failures = {name: run(doubled(load)) for name, load in IDIOMS.items()}
    assert {n: r.get("message") for n, r in failures.items() if not accepted(r)} == {}


def test_the_static_screen_passes_these_kernels_too():
    from autocomp_trn import screen

    sources = [CURRENT + doubled(load) for load in IDIOMS.values()]
    sources += [CURRENT + RESHAPE_OF_COLUMN_SLICES, CURRENT + prioritized("1")]
    assert [f for src in sources for f in screen.check(src)] == []


def test_a_broadcast_row_scales_every_partition():
    spec = problem(
        [Input("x", (128, 1024)), Input("g", (1024,))],
        [((128, 1024), "float32")],
        lambda x, g: (x * g[None, :],),
    )
    body = """
@nki.jit
def solution(x, g):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    gt = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=gt, src=g.reshape((1, 1024)).broadcast(0, 128))
    nisa.tensor_tensor(t, t, gt, nl.multiply)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    assert accepted(run(body, spec))


def test_ap_patterns_that_leave_the_tensor_or_a_partition_are_refused():
    past_the_end = doubled("nisa.dma_copy(dst=t, src=x.ap([[1024, 128], [1, 1024]], 1))")
    assert refused(run(past_the_end), "err_tensor_access_out_of_bound", "reaches elements")
    across = doubled("nisa.dma_copy(dst=t.ap([[512, 128], [1, 1024]], 0), src=x)")
    assert refused(run(across), "err_partition_dim_view", "first pair walks partitions")
    on_a_view = doubled("nisa.dma_copy(dst=t, src=x[:, :].ap([[1024, 128], [1, 1024]], 0))")
    assert accepted(run(on_a_view))  # x[:, :] is the whole tensor
    on_a_slice = doubled(
        "nisa.dma_copy(dst=t[:, 0:512], src=x[:, 0:512].ap([[1024, 128], [1, 512]], 0))"
    )
    assert refused(run(on_a_slice), "err_unsupported_api", "call it on the tensor itself")


def test_get_pattern_and_is_contiguous_describe_a_view():
    from autocomp_trn.emulator.tracer import Tracer

    tensor = Tracer().new_tensor((128, 1024), "float32", "sbuf", 0)
    whole, cols = tensor.full(), tensor.full()[:, 256:512]
    assert whole.get_pattern() == [[1024, 128], [1, 1024]] and whole.is_contiguous()
    assert cols.get_pattern() == [[1024, 128], [1, 256]] and not cols.is_contiguous()


def test_idioms_the_emulator_does_not_model_are_refused_by_name():
    reverse = run(doubled("nisa.dma_copy(dst=t, src=x[:, 1023::-1])"))
    assert refused(reverse, "err_unsupported_api", "negative", "not emulated")
    one_d = run(doubled("v = nl.ndarray((128,), dtype=nl.float32, buffer=nl.sbuf)"))
    assert refused(one_d, "err_insufficient_rank", "at least 2-D")
    gather = run(
        doubled(
            "idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)\n"
            "    nisa.dma_copy(dst=t, src=x[idx, :])"
        )
    )
    assert refused(gather, "err_unsupported_api", "tile of indices", "indirect DMA")
    bitcast = run(doubled("nisa.dma_copy(dst=t.view(nl.int32), src=x)"))
    assert refused(bitcast, "err_unsupported_api", "NkiTensor.view", "not emulated")
    typo = run(doubled("nisa.dma_copy(dst=t.reshap((128, 1024)), src=x)"))
    assert refused(typo, "err_python_exception", "'NkiTensor' object has no attribute 'reshap'")


def test_negative_indices_and_slice_bounds_count_from_the_end():
    # "standard Python slicing syntax" (the NKI indexing guide): x[:, -512:] is the last 512 columns
    halves = "nisa.dma_copy(dst=t[:, 0:512], src=x[:, -1024:-512])\n    nisa.dma_copy(dst=t[:, -512:], src=x[:, -512:])"
    assert accepted(run(doubled(halves)))
    last = "nisa.dma_copy(dst=t, src=x.reshape((1, 128, 1024))[-1])"
    assert accepted(run(doubled(last)))
    # a bound past the axis is still an error (Python would clamp it; an access pattern cannot)
    past = "nisa.dma_copy(dst=t, src=x.reshape((1, 128, 1024))[-2])"
    assert refused(run(doubled(past)), "err_tensor_access_out_of_bound", "index -2")


def test_reshape_pattern_splits_freely_and_merges_only_contiguous_dims():
    from autocomp_trn.emulator.indexing import reshape_pattern

    cols = [(128, 1024), (256, 1)]  # x[:, c0:c0 + 256] of a [128, 1024] tensor
    assert reshape_pattern(cols, (128, 8, 32)) == [(128, 1024), (8, 32), (32, 1)]
    assert reshape_pattern(cols, (128, 1, 256)) == [(128, 1024), (1, 256), (256, 1)]
    assert reshape_pattern(cols, (64, 512)) is None  # rows are 1024 apart, not 256
    blocks = [(8, 2048), (2, 1024), (256, 1)]  # dims 0 and 1 are contiguous with each other
    assert reshape_pattern(blocks, (16, 256)) == [(16, 1024), (256, 1)]
    assert reshape_pattern(blocks, (8, 512)) is None
    row = [(128, 0), (1024, 1)]  # a broadcast row
    assert reshape_pattern(row, (128, 2, 512)) == [(128, 0), (2, 512), (512, 1)]
