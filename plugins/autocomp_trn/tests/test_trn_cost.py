"""The cost model: the per-instruction costs and the schedule behave as nki.md section 5 says."""

from __future__ import annotations

import numpy as np
import pytest
from trn_testkit import DOUBLE, MATMUL, problem, run

from autocomp_trn.emulator.hardware import TRN1, TRN2
from autocomp_trn.problems.spec import Input, ProblemSpec

WIDE = problem([Input("x", (128, 2048))], [((128, 2048), "float32")], lambda x: (2 * x,))


def latency(body, spec=DOUBLE, **kw) -> float:
    result = run(body, spec, numeric=False, **kw)
    assert result["status"] == "ok", result
    return result["latency_us"]


def busy(body, engine, spec=DOUBLE, **kw) -> float:
    return run(body, spec, numeric=False, **kw)["busy_us"][engine]


def ops(n: int, width: int, parts: int = 128) -> str:
    # static_range: one instruction per iteration (no loop-level optimization; an affine_range
    # loop of such instructions is vectorized, see the loop-vectorization tests)
    return f"""
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for k in nl.static_range({n}):
        t2 = nisa.tensor_scalar(t[0:{parts}, 0:{width}], np.multiply, 1.0)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""


def test_tiny_instructions_cost_the_minimum_initiation_interval():
    # 100 instructions on [128, 3] cost as much as 100 on [128, 8]: the fixed cost dominates
    assert busy(ops(100, 3), "dve") == busy(ops(100, 8), "dve")
    per_op = (busy(ops(101, 3), "dve") - busy(ops(1, 3), "dve")) / 100
    assert abs(per_op * 1000 - TRN1.min_ii / TRN1.dve_ghz) < 1.0  # ns


def test_fewer_partitions_do_not_make_an_instruction_cheaper():
    assert busy(ops(10, 512, parts=16), "dve") == busy(ops(10, 512, parts=128), "dve")


def test_wide_instructions_amortize_the_fixed_cost():
    narrow = busy(ops(64, 8), "dve") - busy(ops(0, 8), "dve")
    wide = busy(ops(1, 512), "dve") - busy(ops(0, 512), "dve")
    assert narrow > 5 * wide  # the same 512 elements per partition


def test_fp32_matmuls_take_four_times_longer_than_bf16():
    body = """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(xT, dtype=DT)
    b = nl.load(w, dtype=DT)
    for k in nl.affine_range(16):
        p = nisa.nc_matmul(a, b)
    nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(xT), nl.load(w))))
    return out
"""
    bf16 = busy(body.replace("DT", "nl.bfloat16"), "pe", MATMUL)
    fp32 = busy(body.replace("DT", "nl.float32"), "pe", MATMUL)
    one = busy(body.replace("DT", "nl.bfloat16").replace("range(16)", "range(0)"), "pe", MATMUL)
    assert abs((fp32 - one) / (bf16 - one) - 4.0) < 1e-6


def test_element_granular_dmas_are_much_slower_than_contiguous_ones():
    contiguous = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[:, 0:128])
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
"""
    transposing = contiguous.replace("nl.load(x[:, 0:128])", "nl.load_transpose2d(x[:, 0:128])")
    neither = contiguous.replace("    t = nl.load(x[:, 0:128])\n", "")
    base = busy(neither, "dma")
    # the one [128, 128] fp32 load: an element per DMA beat against 4 KiB rows
    assert busy(transposing, "dma") - base > 5 * (busy(contiguous, "dma") - base)


PIPELINE = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    OUTSIDE
    for j in nl.sequential_range(4):
        INSIDE
        buf[...] = nl.load(x[:, j * 512:(j + 1) * 512])
        y = nl.exp(buf)
        nl.store(out[:, j * 512:(j + 1) * 512], value=nl.multiply(nl.subtract(buf, y), 2.0))
    return out
"""


def test_a_buffer_declared_inside_the_loop_lets_iterations_overlap():
    decl = "buf = nl.ndarray((128, 512), dtype=nl.float32)"
    inside = PIPELINE.replace("OUTSIDE", "").replace("INSIDE", decl)
    outside = PIPELINE.replace("OUTSIDE", decl).replace("INSIDE", "")
    assert latency(inside, WIDE) < 0.9 * latency(outside, WIDE)


def test_trn1_and_trn2_presets_differ():
    assert TRN1.sbuf_bytes_per_partition != TRN2.sbuf_bytes_per_partition
    body = ops(50, 512)
    assert busy(body, "dve", generation="trn2") > busy(
        body, "dve", generation="trn1"
    )  # 0.96 vs 1.12 GHz


def test_the_feedback_names_engine_busy_times_and_the_critical_engine():
    result = run(ops(20, 512), numeric=False)
    text = result["summary"]
    assert "modelled latency" in text and "not a measurement" in text
    assert "critical engine: VectorE" in text and "TensorE" in text and "DMA" in text


def test_more_live_sbuf_than_the_core_has_costs_spill_traffic():
    tiles = "\n".join(
        f"    t{k} = nl.ndarray((128, 12288), dtype=nl.float32)\n    t{k}[:, 0:512] = nl.load(x)"
        for k in range(REPEATS)
    )
    uses = " + ".join(f"t{k}[:, 0:512]" for k in range(REPEATS))
    body = f"""
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
{tiles}
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    s = {uses}
    return out
"""
    result = run(body, numeric=False)  # 5 live tiles of 48 KiB per partition: 240 KiB > 192 KiB
    assert result["status"] == "ok" and "spilled (over capacity)" in result["summary"]
    fits = run(body.replace("12288", "8192"), numeric=False)  # 160 KiB: fits
    assert "spilled" not in fits["summary"] and fits["latency_us"] < result["latency_us"]


REPEATS = 5


#: y = x.T for an fp32 [128, 128] x: a matmul against the identity (a 0/1 moving operand)
TRANSPOSE_FP32 = problem(
    [Input("x", (128, 128))], [((128, 128), "float32")], lambda x: (x.T,), atol=1e-5, rtol=1e-5
)


def identity_transpose(hint: bool) -> str:
    return f"""
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(128)[None, :]
    ident = nisa.affine_select(pred=(ip - jf == 0), on_true_tile=nl.ones((128, 128), nl.float32),
                               on_false_value=0.0)
    t = nl.load(x)
    for k in nl.affine_range(8):
        p = nisa.nc_matmul(t, ident, is_moving_onezero={hint})
    nl.store(out, value=nl.copy(nisa.nc_matmul(t, ident, is_moving_onezero={hint})))
    return out
"""


def test_a_true_onezero_hint_halves_fp32_matmul_cost_and_a_false_one_is_refused():
    hinted, plain = (run(identity_transpose(h), TRANSPOSE_FP32) for h in (True, False))
    assert (hinted["status"], plain["status"]) == ("ok", "ok"), (hinted, plain)
    assert hinted["busy_us"]["pe"] * 2 == pytest.approx(plain["busy_us"]["pe"], rel=0.05)
    # the same hint on the stationary operand (x, any values) is false: refused, not priced
    false = run(
        identity_transpose(True).replace("is_moving_onezero", "is_stationary_onezero"),
        TRANSPOSE_FP32,
    )
    assert (false["status"], false["code"]) == ("rejected", "err_false_hint"), false
    # without data (trace-only calibration) a hint is never priced
    assert busy(identity_transpose(True), "pe", TRANSPOSE_FP32) == busy(
        identity_transpose(False), "pe", TRANSPOSE_FP32
    )


# -- what the compiler and the engines do that the instruction list alone does not show -------
ACCUMULATE = """
@nki.jit
def solution(xT, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(xT)
    b = nl.load(w)
    INIT
    acc += nisa.nc_matmul(a, b)
    acc += nisa.nc_matmul(a, b)
    nl.store(out, value=nl.multiply(acc, 0.5))
    return out
"""


def test_zeroing_a_psum_tile_that_matmuls_accumulate_into_costs_nothing():
    # the first matmul of an accumulation group overwrites its PSUM bank (nki.md 2.7): the zeros
    # are never written, while zeros that an engine add accumulates into are
    psum = ACCUMULATE.replace("INIT", "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)")
    none = ACCUMULATE.replace("INIT", "acc = nisa.nc_matmul(a, b)").replace(
        "    acc += nisa.nc_matmul(a, b)\n", "", 1
    )
    assert run(psum, MATMUL)["status"] == "ok"  # and the sum is still right
    assert busy(psum, "dve", MATMUL) == busy(none, "dve", MATMUL)
    sbuf = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    acc += t
    acc += t
    nl.store(out, value=acc)
    return out
"""
    assert busy(sbuf, "dve") > busy(sbuf.replace("    acc += t\n", "", 1), "dve")


EXP_SUM = """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    BODY
    nl.store(out, value=s)
    return out
"""
SUM_SPEC = problem(
    [Input("x", (128, 512), "float32", "uniform")],
    [((128, 1), "float32")],
    lambda x: (np.exp(x).sum(1, keepdims=True),),
    1e-4,
    1e-4,
)


def test_an_exp_followed_by_its_add_reduce_is_one_scalar_engine_instruction():
    # the compiler merges them into ScalarE's activation-with-reduce (nki.md 5.5; the published
    # sd_attention kernel relies on it): no VectorE pass over the exp's output
    split = EXP_SUM.replace(
        "BODY",
        "e = nisa.activation(nl.exp, data=t)\n    s = nisa.tensor_reduce(np.add, data=e, axis=(1,))",
    )
    fused = EXP_SUM.replace(
        "BODY",
        "s = nl.ndarray((128, 1), dtype=nl.float32)\n"
        "    e = nisa.activation_reduce(nl.exp, data=t, reduce_op=np.add, reduce_res=s)",
    )
    assert run(split, SUM_SPEC)["status"] == "ok"
    assert busy(split, "dve", SUM_SPEC) == busy(fused, "dve", SUM_SPEC)
    assert latency(split, SUM_SPEC) == latency(fused, SUM_SPEC)
    # a max-reduce is not merged: it stays a VectorE pass
    kept = split.replace("np.add, data=e", "np.max, data=e")
    assert busy(kept, "dve", SUM_SPEC) > busy(split, "dve", SUM_SPEC)


TT = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = SECOND
    for k in nl.affine_range(8):
        c = nisa.tensor_tensor(a, b, op=np.add)
    nl.store(out, value=nl.multiply(a, 2.0))
    return out
"""


def test_a_tensor_tensor_with_one_psum_input_streams_one_operand_from_sbuf():
    # nisa docs: a tensor_tensor costs N cycles when one input is in PSUM, 2N from SBUF only
    in_psum = TT.replace(
        "SECOND",
        "nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "    b[...] = nisa.tensor_copy(a[:, 0:512])",
    ).replace("c = nisa.tensor_tensor(a, b", "c = nisa.tensor_tensor(a[:, 0:512], b")
    in_sbuf = in_psum.replace("buffer=nl.psum", "buffer=nl.sbuf")
    assert busy(in_psum, "dve", WIDE) < busy(in_sbuf, "dve", WIDE)


def test_bf16_adds_run_at_one_cycle_per_element():
    fp32 = TT.replace("SECOND", "nl.copy(a)")
    bf16 = fp32.replace("a = nl.load(x)", "a = nl.load(x, dtype=nl.bfloat16)")
    bf16 = bf16.replace("nl.multiply(a, 2.0)", "nl.multiply(a, 2.0, dtype=nl.float32)")

    def loop(body: str) -> float:
        return busy(body, "dve", WIDE) - busy(body.replace("range(8)", "range(0)"), "dve", WIDE)

    assert loop(bf16) < 0.6 * loop(fp32)


CHAIN = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    BODY
    for u in (u0, u1, u2, u3, u4, u5, u6, u7):  # read, so none is dead work (replay/dead.py)
        nl.store(out, value=u)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""


def test_an_engine_hides_operand_access_behind_independent_work_not_dependent_work():
    # nki.md 5.1: the fixed overhead shows when instructions are back-to-back dependent
    independent = CHAIN.replace(
        "BODY",
        "\n    ".join(f"u{i} = nisa.tensor_scalar(t, np.multiply, 1.0)" for i in range(8)),
    )
    dependent = CHAIN.replace(
        "BODY",
        "u0 = nisa.tensor_scalar(t, np.multiply, 1.0)\n    "
        + "\n    ".join(
            f"u{i} = nisa.tensor_scalar(u{i - 1}, np.multiply, 1.0)" for i in range(1, 8)
        ),
    )
    assert busy(independent, "dve") < busy(dependent, "dve")
    per_op = (busy(dependent, "dve") - busy(independent, "dve")) / 7 * 1000  # ns
    assert abs(per_op - TRN1.access_cycles / TRN1.dve_ghz) < 1.0


def window_spec(outputs: int) -> ProblemSpec:
    """out[p, o] = sum_f x[p, o + f] * w[p, f]: a 3-tap window along each partition."""
    return problem(
        [Input("x", (128, outputs + 2)), Input("w", (128, 3))],
        [((128, outputs), "float32")],
        lambda x, w: (sum(x[:, f : f + outputs] * w[:, f : f + 1] for f in range(3)),),
        1e-4,
        1e-4,
    )


def window(outputs: int, loop: str = "affine_range", blocks: int = 1) -> str:
    """The window as one [128, 3] multiply and add-reduce per output, the outputs in ``blocks``
    loops of ``outputs // blocks`` iterations."""
    per = outputs // blocks
    return f"""
@nki.jit
def solution(x, w):
    out = nl.ndarray(({128}, {outputs}), dtype=nl.float32, buffer=nl.shared_hbm)
    xs = nl.load(x)
    ws = nl.load(w)
    acc = nl.ndarray((128, {outputs}), dtype=nl.float32, buffer=nl.sbuf)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(3)[None, :]
    for b in nl.affine_range({blocks}):
        for o in nl.{loop}({per}):
            prod = nisa.tensor_tensor(xs[i_p, i_f + b * {per} + o], ws[i_p, i_f], op=np.multiply)
            acc[i_p, b * {per} + o] = nisa.tensor_reduce(np.add, prod, axis=[1])
    nl.store(out, value=acc)
    return out
"""


def test_a_short_affine_loop_of_tiny_instructions_issues_one_instruction_per_body_instruction():
    # NKI docs: affine_range lets the compiler vectorize the loop, static_range does not; the
    # original conv1d blog measured it (a 64-trip loop of [128, 3] multiply/reduce pairs: the
    # profile's tensor_tensor instructions 65,536 -> 512)
    spec = window_spec(128)
    fused = run(window(128, blocks=2), spec)
    assert fused["status"] == "ok", fused  # the outputs are the same instructions' outputs
    unrolled = run(window(128, "static_range", blocks=2), spec, numeric=False)
    dve = fused["busy_us"]["dve"], unrolled["busy_us"]["dve"]
    assert unrolled["instructions"] - fused["instructions"] == 2 * (128 - 2)
    assert dve[0] < dve[1] / 5
    assert "2 affine_range loops vectorized: 256 iterations' instructions" in fused["summary"]
    # the fused instruction is priced at the engine's per-element rate: 2 x 64 x 3 elements of
    # 2N multiply and N reduce
    per_element = (dve[0] * 1000 * TRN1.dve_ghz - 2 * TRN1.access_cycles) / (2 * 64 * 3)
    assert per_element == pytest.approx(2 + 1, rel=0.01)


def test_a_loop_whose_fused_instruction_would_exceed_the_limit_stays_one_per_iteration():
    # 256 x 3 = 768 elements per partition > vector_fmax (512): left as it is, like the 2048-trip
    # and 512-trip loops the conv1d blog's kernels ran one instruction per iteration
    assert 256 * 3 > TRN1.vector_fmax >= 128 * 3
    spec = window_spec(256)
    long = run(window(256), spec, numeric=False)
    split = run(window(256, blocks=2), spec, numeric=False)
    assert "vectorized" not in long["summary"]
    assert long["instructions"] - split["instructions"] == 2 * (256 - 2)
    assert split["busy_us"]["dve"] < long["busy_us"]["dve"] / 5


def test_iterations_that_differ_in_more_than_their_offsets_are_not_vectorized():
    spec = window_spec(64)
    # a scalar that changes with the iteration: not one instruction's immediate
    varying = window(64).replace(
        "acc[i_p, b * 64 + o] = nisa.tensor_reduce(np.add, prod, axis=[1])",
        "acc[i_p, b * 64 + o] = nisa.tensor_scalar(prod[i_p, 0], np.multiply, float(o))",
    )
    assert "vectorized" not in run(varying, spec, numeric=False)["summary"]
    # += into one place is a reduction across the iterations, not an elementwise loop
    reduction = window(64).replace(
        "acc[i_p, b * 64 + o] = nisa.tensor_reduce", "acc[i_p, 0] += nisa.tensor_reduce"
    )
    reduced = run(reduction, spec, numeric=False)
    assert reduced["status"] == "ok", reduced
    assert "vectorized" not in reduced["summary"]


EXP_SPEC = problem(
    [Input("x", (128, 512), "float32", "uniform")],
    [((128, 512), "float32")],
    lambda x: (np.exp(x),),
    1e-4,
    1e-4,
)
EXP_COPY = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    e = nisa.activation(nl.exp, data=t)
    BODY
    return out
"""


def test_a_copy_of_an_activation_output_nothing_else_reads_is_the_activation_writing_it():
    # an activation writes any output dtype at no extra cost (nisa docs): the compiler lets it
    # write the copy's destination; a second reader of its output keeps the copy (the published
    # sd_attention start keeps its cast of exp, step 3 does not pay for its own)
    direct = EXP_COPY.replace("BODY", "nl.store(out, value=e)")
    copied = EXP_COPY.replace("BODY", "c = nisa.tensor_copy(e)\n    nl.store(out, value=c)")
    shared = copied.replace(
        "    nl.store(out, value=c)",
        "    m = nisa.tensor_reduce(np.max, data=e, axis=(1,))\n    nl.store(out, value=c)",
    )
    only_reduce = shared.replace("c = nisa.tensor_copy(e)\n    ", "").replace("value=c", "value=e")
    assert run(copied, EXP_SPEC)["status"] == "ok"
    assert busy(copied, "dve", EXP_SPEC) == busy(direct, "dve", EXP_SPEC)
    assert latency(copied, EXP_SPEC) == latency(direct, EXP_SPEC)
    copy_cost = busy(shared, "dve", EXP_SPEC) - busy(only_reduce, "dve", EXP_SPEC)
    assert copy_cost * 1000 * TRN1.dve_ghz == pytest.approx(512, rel=0.01)  # N cycles


REDUCE = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x)
    for k in nl.static_range(8):
        r = nisa.tensor_reduce(np.OP, a, axis=(1,))
    nl.store(out, value=nl.multiply(a, 2.0))
    return out
"""


@pytest.mark.parametrize("op", ["add", "max"])
def test_bf16_add_and_max_reductions_take_half_the_cycles(op):
    # nisa docs: tensor_reduce on bf16 data costs N/2 cycles for add and max
    fp32 = REDUCE.replace("OP", op)
    bf16 = fp32.replace("a = nl.load(x)", "a = nl.load(x, dtype=nl.bfloat16)")
    bf16 = bf16.replace("nl.multiply(a, 2.0)", "nl.multiply(a, 2.0, dtype=nl.float32)")

    def loop(body: str) -> float:
        return busy(body, "dve", WIDE) - busy(body.replace("range(8)", "range(0)"), "dve", WIDE)

    assert loop(bf16) < 0.6 * loop(fp32)
