"""The current ``nki.isa`` (NKI 0.8): each instruction through the real tracing and replay path,
its numbers against NumPy, and each verification error raised with a message naming the rule
(on the candidate side where the API refuses a call, and again by the trusted replay)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trn_testkit import problem

from autocomp_trn.emulator import modules
from autocomp_trn.judge import emulate, judge
from autocomp_trn.problems.spec import Input
from autocomp_trn.runtime.trace_main import trace_source

HEADER = "import numpy as np\nimport nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

X = [Input("x", (128, 64))]
SAME = [((128, 64), "float32")]


def run(spec, body: str, generation: str = "trn2") -> dict:
    return emulate(spec, HEADER + body, generation=generation)


def ok(result: dict) -> None:
    assert result["status"] == "ok", result.get("message")


def refused(result: dict, *words: str) -> None:
    assert result["status"] == "compile_error", result
    for word in words:
        assert word in result["message"], result["message"]


#: a kernel that loads x [128, 64] into sbuf tile ``a``, runs BODY, and stores tile ``r``
def kernel(body: str, out_shape=(128, 64), out_dtype="nl.float32") -> str:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"""
@nki.jit
def solution(x):
    out = nl.ndarray({out_shape}, dtype={out_dtype}, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    r = nl.ndarray({out_shape}, dtype={out_dtype}, buffer=nl.sbuf)
{lines}
    nisa.dma_copy(dst=out, src=r)
    return out
"""


# ---------------------------------------------------------------- numbers


#: the instructions v1 also has, in their current (dst-first, keyword) form: body, output shape,
#: reference of x (a [128, 64] fp32 input, loaded into tile ``a``; the result in tile ``r``)
CLASSIC = {
    "tensor_tensor": (
        "nisa.tensor_tensor(dst=r, data1=a, data2=a, op=nl.multiply)",
        (128, 64),
        lambda x: x * x,
    ),
    "tensor_scalar": (
        "nisa.tensor_scalar(dst=r, data=a, op0=nl.subtract, operand0=1.0, reverse0=True,"
        " op1=nl.multiply, operand1=3.0)",
        (128, 64),
        lambda x: (1.0 - x) * 3.0,
    ),
    "tensor_reduce": (
        "nisa.tensor_reduce(dst=r, op=nl.maximum, data=a, axis=1, negate=True, keepdims=True)",
        (128, 1),
        lambda x: -x.max(axis=1, keepdims=True),
    ),
    "tensor_partition_reduce": (
        "nisa.tensor_partition_reduce(dst=r, op=nl.add, data=a)",
        (1, 64),
        lambda x: x.sum(axis=0, keepdims=True),
    ),
    "tensor_copy": (
        "nisa.tensor_copy(dst=r, src=a, engine=nisa.scalar_engine)",
        (128, 64),
        lambda x: x,
    ),
    "activation_reduce": (
        "s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.activation_reduce(dst=s, op=nl.exp, data=a, reduce_op=nl.add, reduce_res=r, scale=0.5)",
        (128, 1),
        lambda x: np.exp(0.5 * x).sum(axis=1, keepdims=True),
    ),
    "reciprocal": ("nisa.reciprocal(dst=r, data=a)", (128, 64), lambda x: 1.0 / x),
    "tensor_tensor_scan": (
        "nisa.tensor_tensor_scan(dst=r, data0=a, data1=a, initial=0.0, op0=nl.multiply, op1=nl.add)",
        (128, 64),
        None,
    ),
    "memset": ("nisa.memset(dst=r, value=-2.5)", (128, 64), lambda x: np.full((128, 64), -2.5)),
}


def _scan(x):
    out, r = np.empty_like(x), np.zeros(x.shape[0], np.float32)
    for i in range(x.shape[1]):
        r = x[:, i] * r + x[:, i]
        out[:, i] = r
    return out


@pytest.mark.parametrize("name", sorted(CLASSIC))
def test_the_classic_instructions_in_their_current_form(name):
    body, shape, ref = CLASSIC[name]
    ref = ref or _scan
    dist = "positive" if name == "reciprocal" else "uniform"
    spec = problem(
        [Input("x", (128, 64), "float32", dist)],
        [(shape, "float32")],
        lambda x: (ref(x),),
        1e-4,
        1e-4,
    )
    ok(run(spec, kernel(body, shape)))


def test_activation_takes_a_scalar_bias():
    spec = problem(X, SAME, lambda x: (np.exp(x - 1.0),), atol=1e-4, rtol=1e-4)
    ok(run(spec, kernel("nisa.activation(dst=r, op=nl.exp, data=a, bias=-1.0)")))


def test_scalar_tensor_tensor():
    spec = problem(X, SAME, lambda x: ((x * 2.0) - x * x,))
    body = """
sq = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_tensor(dst=sq, data1=a, data2=a, op=nl.multiply)
nisa.scalar_tensor_tensor(dst=r, data=a, op0=nl.multiply, operand0=2.0, op1=nl.subtract, operand1=sq)
"""
    ok(run(spec, kernel(body)))


def test_tensor_scalar_reduce_writes_the_result_and_its_reduction():
    spec = problem(
        X,
        [((128, 64), "float32"), ((128, 1), "float32")],
        lambda x: (x * 3.0, -(x * 3.0).max(axis=1, keepdims=True)),
    )
    code = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=r, data=a, op0=nl.multiply, operand0=3.0, reduce_op=nl.maximum,
                              reduce_res=m, reduce_res_negate=True)
    nisa.dma_copy(dst=out, src=r)
    nisa.dma_copy(dst=red, src=m)
    return out, red
"""
    ok(run(spec, code))


def test_iota_fills_the_affine_pattern():
    p, f = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    spec = problem(X, SAME, lambda x: (x + (5 + 64 * p + 2 * (f // 8) + 16 * (f % 8)),))
    body = """
idx = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
nisa.iota(dst=idx, pattern=[[2, 8], [16, 8]], offset=5, channel_multiplier=64)
nisa.tensor_tensor(dst=r, data1=a, data2=idx, op=nl.add)
"""
    ok(run(spec, kernel(body)))


def test_iota_into_an_int32_tile_is_exact_past_fp32_precision():
    big = 2**24 + 1  # not a float32
    spec = problem(
        X,
        [((128, 64), "int32")],
        lambda x: (
            np.broadcast_to(big + np.arange(64, dtype=np.int64), (128, 64)).astype(np.int32),
        ),
        atol=0.5,
        rtol=0,
    )
    ok(
        run(
            spec, kernel(f"nisa.iota(dst=r, pattern=[[1, 64]], offset={big})", out_dtype="nl.int32")
        )
    )


def test_an_iota_pattern_must_cover_dst_and_be_pairs_of_ints():
    spec = problem(X, SAME, lambda x: (x,))
    refused(run(spec, kernel("nisa.iota(dst=r, pattern=[[1, 32]], offset=0)")), "covers 32")
    refused(run(spec, kernel("nisa.iota(dst=r, pattern=[[1.5, 64]], offset=0)")), "pairs of ints")


def test_affine_select_applies_a_causal_mask():
    q = np.arange(128)[:, None]
    k = np.arange(64)[None, :]
    spec = problem(X, SAME, lambda x: (np.where(q - k >= 0, x, -9984.0),))
    body = """
nisa.affine_select(dst=r, pattern=[[-1, 64]], offset=0, channel_multiplier=1, on_true_tile=a,
                   on_false_value=-9984.0, cmp_op=nl.greater_equal)
"""
    ok(run(spec, kernel(body)))


def test_bn_stats_and_bn_aggr_give_mean_and_variance():
    spec = problem(
        X,
        [((128, 2), "float32")],
        lambda x: (np.stack([x.mean(axis=1), x.var(axis=1)], axis=1),),
        atol=1e-4,
        rtol=1e-4,
    )
    body = """
st = nl.ndarray((128, 12), dtype=nl.float32, buffer=nl.sbuf)
nisa.bn_stats(dst=st[:, 0:6], data=a[:, 0:40])
nisa.bn_stats(dst=st[:, 6:12], data=a[:, 40:64])
nisa.bn_aggr(dst=r, data=st)
"""
    ok(run(spec, kernel(body, (128, 2))))


def test_max8_and_nc_find_index8_find_the_largest_values_and_where_they_are():
    def ref(x):
        order = np.argsort(-x, axis=1, kind="stable")[:, :8]
        return (np.take_along_axis(x, order, axis=1), order.astype(np.uint32))

    spec = problem(X, [((128, 8), "float32"), ((128, 8), "uint32")], ref, atol=1e-6, rtol=0)
    code = """
@nki.jit
def solution(x):
    top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    where = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    m = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    i = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.max8(dst=m, src=a)
    nisa.nc_find_index8(dst=i, data=a, vals=m)
    nisa.dma_copy(dst=top, src=m)
    nisa.dma_copy(dst=where, src=i)
    return top, where
"""
    ok(run(spec, code))


def test_nc_find_index8_writes_all_ones_for_a_value_not_found():
    spec = problem(X, [((128, 8), "uint32")], lambda x: (np.full((128, 8), 0xFFFFFFFF, np.uint32),))
    body = """
v = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
nisa.memset(dst=v, value=1000.0)
nisa.nc_find_index8(dst=r, data=a, vals=v)
"""
    ok(run(spec, kernel(body, (128, 8), "nl.uint32")))


def test_duplicate_values_pair_with_distinct_positions():
    # nisa docs: find_index8 pairs duplicates in ascending order, match_replace8 in descending
    data = np.array([1, 2, 3, 4] + [8] * 7 + [0] * 5, np.float32)
    spec = problem(
        X,
        [((128, 8), "uint32"), ((128, 8), "uint32"), ((128, 16), "float32")],
        lambda x: (
            np.tile(np.array([2, 4, 5, 6, 7, 8, 9, 10], np.uint32), (128, 1)),
            np.tile(np.array([2, 10, 9, 8, 7, 6, 5, 4], np.uint32), (128, 1)),
            np.tile(np.where(np.isin(np.arange(16), [2, *range(4, 11)]), -1.0, data), (128, 1)),
        ),
        atol=1e-6,
        rtol=0,
    )
    code = """
@nki.jit
def solution(x):
    o1 = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    o2 = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    o3 = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    d = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=d[:, 0:4], pattern=[[1, 4]], offset=1)
    nisa.memset(dst=d[:, 4:11], value=8.0)
    nisa.memset(dst=d[:, 11:16], value=0.0)
    v = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=v[:, 0:1], value=3.0)
    nisa.memset(dst=v[:, 1:8], value=8.0)
    i1 = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    i2 = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    r = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=i1, data=d, vals=v)
    nisa.nc_match_replace8(dst=r, data=d, vals=v, imm=-1.0, dst_idx=i2)
    nisa.dma_copy(dst=o1, src=i1)
    nisa.dma_copy(dst=o2, src=i2)
    nisa.dma_copy(dst=o3, src=r)
    return o1, o2, o3
"""
    ok(run(spec, code))


def test_tensor_copy_predicated_keeps_dst_where_the_predicate_is_zero():
    spec = problem(X, SAME, lambda x: (np.where(x > 0.0, x, 7.0),))
    body = """
nisa.memset(dst=r, value=7.0)
p = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.sbuf)
nisa.tensor_scalar(dst=p, data=a, op0=nl.greater, operand0=0.0)
nisa.tensor_copy_predicated(dst=r, src=a, predicate=p)
"""
    ok(run(spec, kernel(body)))
    scalar = body.replace("src=a, predicate=p)", "src=1, predicate=p)")
    refused(run(spec, kernel(scalar)), "must be of dst's kind")


RANGE = """
lo = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
hi = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.iota(dst=lo, pattern=[[0, 1]], offset=0, channel_multiplier=0)
nisa.iota(dst=hi, pattern=[[0, 1]], offset=0, channel_multiplier=1)
m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.range_select(dst=r, on_true_tile=a, comp_op0=nl.greater_equal, comp_op1=nl.less_equal,
                  bound0=lo, bound1=hi, reduce_res=m, reduce_op=nl.maximum,
                  reduce_cmd=nisa.reduce_cmd.reset_reduce, on_false_value=-100.0)
"""


def test_range_select_keeps_a_per_partition_range_on_trn2_and_is_refused_on_trn1():
    keep = np.arange(64)[None, :] <= np.arange(128)[:, None]
    spec = problem(X, SAME, lambda x: (np.where(keep, x, -100.0),))
    ok(run(spec, kernel(RANGE), "trn2"))
    refused(run(spec, kernel(RANGE), "trn1"), "range_select", "NeuronCore-v3")


def test_select_reduce_chooses_by_a_predicate_and_takes_the_max():
    spec = problem(
        X,
        [((128, 64), "float32"), ((128, 1), "float32")],
        lambda x: (np.where(x < 0.5, x, -5.0), np.where(x < 0.5, x, -5.0).max(1, keepdims=True)),
    )
    code = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    mx = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    p = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=p, data=a, op0=nl.less, operand0=0.5)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=r, predicate=p, on_true=a, on_false=-5.0, reduce_res=m,
                       reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.dma_copy(dst=out, src=r)
    nisa.dma_copy(dst=mx, src=m)
    return out, mx
"""
    ok(run(spec, code))


def test_nc_stream_shuffle_moves_partitions_within_each_quadrant():
    mask = [(i + 1) % 32 for i in range(31)] + [255]

    def ref(x):
        out = np.full_like(x, 9.0)
        for q in range(4):
            for i, m in enumerate(mask):
                if m != 255:
                    out[q * 32 + i] = x[q * 32 + m]
        return (out,)

    body = f"""
nisa.memset(dst=r, value=9.0)
nisa.nc_stream_shuffle(dst=r, src=a, shuffle_mask={mask})
"""
    ok(run(problem(X, SAME, ref), kernel(body)))


def test_tensor_scalar_cumulative_runs_a_reduction_along_the_free_axis():
    spec = problem(
        X,
        [((128, 64), "float32"), ((128, 64), "float32")],
        lambda x: (np.cumsum(x * 2.0, axis=1), np.maximum.accumulate(x, axis=1).clip(0.5)),
        atol=1e-4,
        rtol=1e-4,
    )
    code = """
@nki.jit
def solution(x):
    o1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    o2 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=s, src=a, op0=nl.multiply, op1=nl.add, imm0=2.0)
    nisa.tensor_scalar_cumulative(dst=m, src=a, op0=nl.add, op1=nl.maximum, imm0=0.0, imm1=0.5,
                                  reduce_cmd=nisa.reduce_cmd.load_reduce)
    nisa.dma_copy(dst=o1, src=s)
    nisa.dma_copy(dst=o2, src=m)
    return o1, o2
"""
    ok(run(spec, code))


def test_topk_selects_per_group_of_16_partitions_in_the_snake_layout():
    n, k = 100, 20  # src [128, 7]: 8 groups of 16 partitions, 100 of their 112 slots active

    def ref(x):
        vals = np.full((128, k), 0.0, np.float32)
        idx = np.zeros((128, k), np.uint32)
        for g in range(8):
            snake = x[g * 16 : (g + 1) * 16].T.reshape(-1)[:n]
            order = np.argsort(-snake, kind="stable")[:k]
            for j, o in enumerate(order):  # result j at partition j % 16, column j // 16
                vals[g * 16 + j % 16, j // 16] = snake[o]
                idx[g * 16 + j % 16, j // 16] = o
        return vals[:, :1], idx[:, :1]  # the first column is complete (k >= 16)

    spec = problem(
        [Input("x", (128, 7), "bfloat16")],
        [((128, 1), "bfloat16"), ((128, 1), "uint32")],
        ref,
        atol=1e-6,
        rtol=0,
    )
    code = f"""
@nki.jit
def solution(x):
    o1 = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    o2 = nl.ndarray((128, 1), dtype=nl.uint32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 7), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    v = nl.ndarray((128, {k}), dtype=nl.bfloat16, buffer=nl.sbuf)
    i = nl.ndarray((128, {k}), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.topk(val_dst=v, idx_dst=i, src=a, n={n}, sorted=True)
    nisa.dma_copy(dst=o1, src=v[:, 0:1])
    nisa.dma_copy(dst=o2, src=i[:, 0:1])
    return o1, o2
"""
    ok(run(spec, code))
    refused(run(spec, code.replace("n=100", "n=4")), "topk", "n must be in [8, 65536)")


GATHER = """
idx = nl.ndarray((128, 16), dtype=nl.uint32, buffer=nl.sbuf)
nisa.iota(dst=idx, pattern=[[{step}, 16]], offset=1, channel_multiplier=0)
g = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
nisa.nc_n_gather(dst=g, data=a, indices=idx)
nisa.tensor_copy(dst=r, src=g)
"""


def test_nc_n_gather_gathers_inside_each_partition_and_refuses_an_index_past_it():
    spec = problem(X, [((128, 16), "float32")], lambda x: (x[:, 1::4],))
    ok(run(spec, kernel(GATHER.format(step=4), (128, 16))))
    refused(run(spec, kernel(GATHER.format(step=5), (128, 16))), "index 76 is past the 64")


def test_nonzero_with_count_on_every_16th_partition():
    def ref(x):
        out = np.full((128, 65), 7, np.int32)
        for p in range(0, 128, 16):
            hits = np.flatnonzero(x[p] > 0.0)
            out[p, :] = -1
            out[p, : len(hits)] = hits + 100
            out[p, -1] = len(hits)
        return (out,)

    body = """
nisa.memset(dst=r, value=7)
m = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
nisa.tensor_scalar(dst=m, data=a, op0=nl.greater, operand0=0.0)
nisa.nonzero_with_count(dst=r, src=m, index_offset=100)
"""
    spec = problem(X, [((128, 65), "int32")], ref, atol=0.5, rtol=0)
    ok(run(spec, kernel(body, (128, 65), "nl.int32"), "trn2"))
    refused(run(spec, kernel(body, (128, 65), "nl.int32"), "trn1"), "NeuronCore-v3")


def test_nl_abs_max_as_a_tensor_scalar_op_on_trn3_and_refused_on_trn2():
    spec = problem(X, SAME, lambda x: (np.where(np.abs(x) > 0.5, x, 0.5),))
    body = "nisa.tensor_scalar(dst=r, data=a, op0=nl.abs_max, operand0=0.5)"
    ok(run(spec, kernel(body), "trn3"))
    refused(run(spec, kernel(body), "trn2"), "abs_max", "NeuronCore-v4")


def test_dma_transpose_of_a_2d_tile():
    spec = problem([Input("x", (64, 128))], [((128, 64), "float32")], lambda x: (x.T,))
    code = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    ok(run(spec, code))


MATMUL_K256 = problem(
    [Input("xT", (256, 128), "bfloat16", "uniform"), Input("w", (256, 64), "bfloat16", "uniform")],
    [((128, 64), "float32")],
    lambda xT, w: (xT.T.astype(np.float32) @ w.astype(np.float32),),
    atol=1e-3,
    rtol=1e-3,
)


def matmul_kernel(first: str, psum_dtype: str = "nl.float32") -> str:
    return f"""
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype={psum_dtype}, buffer=nl.psum)
    for k in range(2):
        a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        b = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=xT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=b, src=w[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate={first} if k == 0 else True)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=acc)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def test_nc_matmul_accumulates_after_a_first_overwrite():
    ok(emulate(MATMUL_K256, HEADER + matmul_kernel("False"), generation="trn2"))


def test_a_bf16_psum_matmul_destination_runs_on_trn3_and_is_refused_on_trn2():
    code = HEADER + matmul_kernel("False", "nl.bfloat16")
    # the first product is rounded to bf16 in PSUM before the second adds to it
    spec = problem(MATMUL_K256.inputs, MATMUL_K256.outputs, MATMUL_K256.reference, 0.1, 2e-2)
    ok(emulate(spec, code, generation="trn3"))
    refused(emulate(spec, code, generation="trn2"), "bfloat16 PSUM", "NeuronCore-v4")


FP8 = problem(
    [
        Input("xT", (128, 128), "float8_e4m3", "uniform"),
        Input("w", (128, 512), "float8_e4m3", "uniform"),
    ],
    [((128, 512), "float32")],
    lambda xT, w: (xT.T.astype(np.float32) @ w.astype(np.float32),),
    atol=1e-3,
    rtol=1e-3,
)
FP8_CODE = """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 128), dtype={dtype}, buffer=nl.sbuf)
    b = nl.ndarray((128, 512), dtype={dtype}, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=xT)
    nisa.dma_copy(dst=b, src=w)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for i in range(4):
        nisa.nc_matmul(dst=acc, stationary=a, moving=b, perf_mode=nisa.matmul_perf_mode.{mode})
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=acc, op0=nl.multiply, operand0=0.25)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def test_double_row_fp8_matmuls_take_half_the_tensor_engine_time():
    plain = run(FP8, FP8_CODE.format(dtype="nl.float8_e4m3", mode="none"))
    double = run(FP8, FP8_CODE.format(dtype="nl.float8_e4m3", mode="double_row"))
    ok(plain)
    ok(double)
    assert double["busy_us"]["pe"] == pytest.approx(plain["busy_us"]["pe"] / 2)
    bf16 = problem(FP8.inputs, FP8.outputs, FP8.reference, atol=1e-2, rtol=1e-2)
    code = FP8_CODE.format(dtype="nl.bfloat16", mode="double_row")
    refused(run(bf16, code), "double_row", "both operands must be fp8")


TRANSPOSING_MATMUL = """
@nki.jit
def solution(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    diff = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=diff, pattern=[[-1, 128]], offset=0, channel_multiplier=1)
    eye = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=eye, data=diff, op0=nl.equal, operand0=0.0, op1=nl.multiply, operand1={scale})
    p = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=a, moving=eye, is_transpose=True)
    r = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def test_nc_matmul_is_transpose_transposes_through_an_identity():
    spec = problem(X, [((64, 128), "float32")], lambda x: (x.T,), atol=1e-6, rtol=0)
    ok(run(spec, TRANSPOSING_MATMUL.format(scale="1.0")))
    refused(run(spec, TRANSPOSING_MATMUL.format(scale="2.0")), "needs an identity matrix")


def test_get_nc_version_names_the_target():
    spec = problem(X, SAME, lambda x: (x * 3.0,))
    body = """
factor = 3.0 if nisa.get_nc_version() == nisa.nc_version.gen3 else 5.0
nisa.tensor_scalar(dst=r, data=a, op0=nl.multiply, operand0=factor)
"""
    ok(run(spec, kernel(body), "trn2"))
    assert run(spec, kernel(body), "trn3")["status"] == "wrong_answer"


# ---------------------------------------------------------------- NeuronCore-v4 instructions

EXP = problem(
    X,
    [((128, 64), "float32"), ((128, 1), "float32")],
    lambda x: (np.exp(x - 0.5), np.exp(x - 0.5).sum(axis=1, keepdims=True)),
    atol=1e-4,
    rtol=1e-4,
)
EXP_CODE = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=r, src=a, max_value=0.5, reduce_res=s,
                     reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.dma_copy(dst=out, src=r)
    nisa.dma_copy(dst=total, src=s)
    return out, total
"""


def test_exponential_on_trn3():
    ok(run(EXP, EXP_CODE, "trn3"))


def test_exponential_accumulates_a_sum_across_tiles_in_the_vector_registers():
    spec = problem(
        X,
        [((128, 1), "float32")],
        lambda x: (2.0 + np.exp(x).sum(axis=1, keepdims=True),),
        atol=1e-4,
        rtol=1e-4,
    )
    body = """
e = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
start = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.memset(dst=start, value=2.0)
nisa.exponential(dst=e, src=a[:, 0:32], reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=start)
nisa.exponential(dst=e, src=a[:, 32:64], reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce)
"""
    ok(run(spec, kernel(body, (128, 1)), "trn3"))
    # without the load, the registers hold nothing any instruction wrote: NaN, a wrong answer
    unloaded = body.replace("reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=start", "")
    assert run(spec, kernel(unloaded, (128, 1)), "trn3")["status"] == "wrong_answer"


def test_tensor_scalar_reduce_commands_drive_the_vector_registers():
    spec = problem(X, [((128, 1), "float32")], lambda x: ((x + 1.0).max(axis=1, keepdims=True),))
    body = """
t = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_scalar_reduce(dst=t, data=a[:, 0:32], op0=nl.add, operand0=1.0, reduce_op=nl.maximum)
nisa.tensor_scalar_reduce(dst=t, data=a[:, 32:64], op0=nl.add, operand0=1.0, reduce_op=nl.maximum,
                          reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce)
"""
    ok(run(spec, kernel(body, (128, 1))))


def test_exponential_is_refused_on_trn2_by_the_candidate_side():
    refused(run(EXP, EXP_CODE, "trn2"), "exponential", "NeuronCore-v4")


def _trace(code: str, inputs, generation: str) -> dict:
    with modules.installed(generation):
        status, text = trace_source(
            HEADER + code, "solution", inputs, {}, generation, 192 * 1024, 10_000
        )
    assert status["status"] == "ok", status
    return json.loads(text)


def test_a_trn3_trace_replayed_for_trn2_is_refused_by_the_trusted_side():
    trace = _trace(EXP_CODE, [["x", [128, 64], "float32"]], "trn3")
    assert judge(EXP, json.dumps(trace), [1], "trn3")["status"] == "ok"
    result = judge(EXP, json.dumps(trace), [1], "trn2")
    refused(result, "nki.isa.exponential", "NeuronCore-v4", "trn2")


def test_activate2_on_trn3_and_refused_on_trn2():
    spec = problem(X, SAME, lambda x: (np.tanh(x * 2.0 - 0.25),), atol=1e-5, rtol=1e-4)
    body = """
nisa.activate2(dst=r, op=nl.tanh, data=a, imm0=2.0, imm1=0.25, op0=nl.multiply, op1=nl.subtract)
"""
    ok(run(spec, kernel(body), "trn3"))
    refused(run(spec, kernel(body), "trn2"), "activate2", "NeuronCore-v4")


def test_an_abs_max_tensor_scalar_is_refused_on_trn2_by_the_trusted_side():
    spec = problem(X, SAME, lambda x: (np.where(np.abs(x) > 0.5, x, 0.5),))
    body = "nisa.tensor_scalar(dst=r, data=a, op0=nl.maximum, operand0=0.5)"
    trace = _trace(kernel(body), [["x", [128, 64], "float32"]], "trn2")
    for e in trace["events"]:
        if e[0] == "op" and e[1] == "tensor_scalar":
            e[4]["op0"] = "abs_max"  # as a trace recording nl.abs_max reads
    assert judge(spec, json.dumps(trace), [1], "trn3")["status"] == "ok"
    refused(judge(spec, json.dumps(trace), [1], "trn2"), "abs_max", "NeuronCore-v4")


# ---------------------------------------------------------------- verification errors


def test_accumulate_true_onto_psum_nothing_wrote_is_refused():
    result = emulate(MATMUL_K256, HEADER + matmul_kernel("True"), generation="trn2")
    refused(result, "accumulate=True", "nothing has written")


def test_memset_value_types_are_strict():
    spec = problem(X, [((128, 64), "int32")], lambda x: (np.full((128, 64), 2, np.int32),))
    refused(run(spec, kernel("nisa.memset(dst=r, value=2.5)", out_dtype="nl.int32")), "not a int32")
    refused(
        run(spec, kernel("nisa.memset(dst=r, value=True)", out_dtype="nl.int32")), "int or float"
    )
    ok(run(spec, kernel("nisa.memset(dst=r, value=2)", out_dtype="nl.int32")))


def test_rsqrt_reading_psum_is_refused():
    body = """
p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
nisa.tensor_copy(dst=p, src=a)
nisa.activation(dst=r, op=nl.rsqrt, data=p)
"""
    spec = problem([Input("x", (128, 64), "float32", "positive")], SAME, lambda x: (x**-0.5,))
    refused(run(spec, kernel(body)), "rsqrt cannot read PSUM", "NKI 0.5")
    ok(run(spec, kernel(body.replace("nl.psum", "nl.sbuf"))))


def test_the_trusted_side_rechecks_memset_value_types():
    spec = problem(X, [((128, 64), "int32")], lambda x: (np.full((128, 64), 2, np.int32),))
    trace = _trace(
        kernel("nisa.memset(dst=r, value=2)", out_dtype="nl.int32"),
        [["x", [128, 64], "float32"]],
        "trn2",
    )
    assert judge(spec, json.dumps(trace), [1], "trn2")["status"] == "ok"
    for e in trace["events"]:
        if e[0] == "op" and e[1] == "memset":
            e[4]["value"] = 2.5
    refused(judge(spec, json.dumps(trace), [1], "trn2"), "not a int32 value", "NKI 0.3")


def test_dma_from_psum_is_refused():
    body = """
p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
nisa.tensor_copy(dst=p, src=a)
nisa.dma_copy(dst=r, src=p)
"""
    refused(run(problem(X, SAME, lambda x: (x,)), kernel(body)), "PSUM", "NKI 0.3")


def test_dma_copy_does_not_broadcast_implicitly():
    spec = problem(X, SAME, lambda x: (np.broadcast_to(x[0:1], (128, 64)),))
    refused(
        run(spec, kernel("nisa.dma_copy(dst=r, src=a[0:1, :])")), "differ in shape", "broadcast"
    )


def test_dma_copy_on_the_hardware_dge_does_not_cast():
    spec = problem(X, [((128, 64), "bfloat16")], lambda x: (x,), atol=1e-2, rtol=1e-2)
    body = "nisa.dma_copy(dst=r, src=a, dge_mode=nisa.dge_mode.{})"
    refused(
        run(spec, kernel(body.format("hwdge"), out_dtype="nl.bfloat16")), "hwdge", "cannot cast"
    )
    ok(run(spec, kernel(body.format("unknown"), out_dtype="nl.bfloat16")))


def test_the_trusted_side_rechecks_the_hardware_dge_dtypes():
    spec = problem(X, [((128, 64), "bfloat16")], lambda x: (x,), atol=1e-2, rtol=1e-2)
    trace = _trace(
        kernel("nisa.dma_copy(dst=r, src=a)", out_dtype="nl.bfloat16"),
        [["x", [128, 64], "float32"]],
        "trn2",
    )
    assert judge(spec, json.dumps(trace), [1], "trn2")["status"] == "ok"
    for e in trace["events"]:
        if e[0] == "op" and e[1] == "dma":
            e[4]["dge"] = "hwdge"
    refused(judge(spec, json.dumps(trace), [1], "trn2"), "hardware DGE needs matching dtypes")


def test_dma_transpose_checks_the_exact_rank():
    spec = problem([Input("x", (4, 8, 16))], [((16, 8, 4), "float32")], lambda x: (x.T,))
    code = """
@nki.jit
def solution(x):
    out = nl.ndarray((16, 8, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 8, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x, axes={})
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    ok(run(spec, code.format("(2, 1, 0)")))
    refused(run(spec, code.format("(1, 0)")), "exactly", "NKI 0.4")


def test_nc_transpose_keeps_the_dtype():
    spec = problem(X, [((64, 128), "float32")], lambda x: (x.T,))
    code = """
@nki.jit
def solution(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    p = nl.ndarray((64, 128), dtype={}, buffer=nl.psum)
    nisa.nc_transpose(dst=p, data=a)
    r = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=p)
    nisa.dma_copy(dst=out, src=r)
    return out
"""
    ok(run(spec, code.format("nl.float32")))
    refused(run(spec, code.format("nl.bfloat16")), "nc_transpose dst must have data's dtype")


@pytest.mark.parametrize(
    ("call", "words"),
    [
        ("nisa.tensor_copy_dynamic_src(r, a)", ("removed in NKI 0.4", "nisa.dma_copy")),
        ("nisa.register_alloc(0)", ("deprecated since NKI 0.8", "scalar_load")),
        ("nisa.core_barrier(r)", ("moved to nki.lnc",)),
        ("nisa.tensor_copy(dst=r, src=a, engine=2)", ("raw integers",)),
    ],
)
def test_api_the_current_nki_removed_or_refuses(call, words):
    refused(run(problem(X, SAME, lambda x: (x,)), kernel(call)), *words)
