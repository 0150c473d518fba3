"""The emulator's API and the trust boundary: v1 and v2 kernels, numerics, and forged traces
refused or caught by the trusted replay."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trn_testkit import DOUBLE, MATMUL, run

from autocomp_trn.emulator.hardware import TRN1
from autocomp_trn.emulator.replay import TraceRefused, replay
from autocomp_trn.judge import emulate, judge
from autocomp_trn.problems.catalog import spec_by_id

V2_MATMUL = """
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
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for half in nl.affine_range(2):
        nisa.nc_matmul(acc, a[0:64, :], b[0:64, :]) if half == 0 else nisa.nc_matmul(acc, a[64:128, :], b[64:128, :])
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nisa.dma_copy(out, res)
    return out
"""


def test_a_v2_kernel_with_explicit_destinations_and_auto_accumulation():
    assert emulate(MATMUL, V2_MATMUL)["status"] == "ok"


def test_bf16_storage_rounds_on_every_write():
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x, dtype=nl.bfloat16), 2.0, dtype=nl.bfloat16))
    return out
"""
    result = run(body)  # x * 2 through bf16 loses ~3 decimal digits: refused at fp32 tolerance
    assert result["status"] == "wrong_answer" and "differs from the reference" in result["message"]


def test_different_seeds_draw_different_inputs():
    spec = spec_by_id("advanced/rope")
    a, b = spec.make_inputs([1]), spec.make_inputs([2])
    assert not np.array_equal(a[0], b[0])


# ---------------------------------------------------------------- forged traces


def _honest_trace() -> dict:
    from trn_testkit import HEADER

    from autocomp_trn.emulator import modules
    from autocomp_trn.runtime.trace_main import trace_source

    body = (
        HEADER
        + """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
"""
    )
    with modules.installed():
        status, text = trace_source(
            body, "solution", [["x", [128, 512], "float32"]], {}, "trn1", 192 * 1024, 10_000
        )
    assert status["status"] == "ok"
    return json.loads(text)


def _judge(trace: dict) -> dict:
    return judge(DOUBLE, json.dumps(trace), [3, 4], "trn1")


def test_the_honest_trace_is_judged_correct():
    assert _judge(_honest_trace())["status"] == "ok"


def test_a_shortened_trace_cannot_produce_the_outputs():
    trace = _honest_trace()
    trace["events"] = [e for e in trace["events"] if not (e[0] == "op" and e[1] == "tensor_scalar")]
    result = _judge(trace)
    assert result["status"] == "wrong_answer" and "NaN" in result["message"]


def test_an_edited_trace_computes_what_it_says_not_what_it_claims():
    trace = _honest_trace()
    for e in trace["events"]:
        if e[0] == "op" and e[1] == "tensor_scalar":
            e[4]["operand0"] = 3.0
    assert _judge(trace)["status"] == "wrong_answer"


def test_cost_claims_inside_a_trace_are_ignored():
    trace = _honest_trace()
    base = _judge(trace)["latency_us"]
    for e in trace["events"]:
        if e[0] == "op":
            e[4].update(cost_ns=0, latency_us=0.001, engine="vector")
    assert _judge(trace)["latency_us"] == pytest.approx(base)


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda t: t["events"].append(["op", "teleport", [], [], {}, 0]), "unknown instruction"),
        (lambda t: t["events"][-1][3][0].__setitem__(1, 10**9), "out of bounds"),
        (lambda t: t["events"][-1][3][0].__setitem__(0, 999), "never allocated"),
        (
            lambda t: t.__setitem__("outputs", [0]),
            "kernel outputs must be HBM tensors the kernel created",
        ),
        (lambda t: t["events"].insert(2, ["loop", "affine", 3, 1]), "a loop never ended"),
        (lambda t: t.__setitem__("version", 7), "unknown version"),
        (lambda t: t["events"][0].__setitem__(2, [256, 512]), "inputs do not match the problem"),
    ],
)
def test_malformed_or_forged_traces_are_refused(edit, words):
    trace = _honest_trace()
    edit(trace)
    result = _judge(trace)
    assert result["status"] in ("rejected", "compile_error") and words in result["message"], result


def test_replay_refuses_a_trace_that_is_not_structured():
    with pytest.raises(TraceRefused, match="malformed trace"):
        replay(
            {"version": 1, "inputs": [0], "outputs": [1], "events": [["alloc", "x"]]},
            TRN1,
            [((128, 512), "float32")],
        )


def test_the_nki_modules_exist_only_while_a_kernel_is_traced():
    import importlib.util
    import sys

    names = ("nki", "nki.language", "neuronxcc", "neuronxcc.nki", "neuronxcc.nki.isa")
    before = {name: sys.modules.get(name) for name in names}
    run("""
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
""")
    # restored exactly as they were (absent, unless an earlier test in this process left them:
    # an in-process trace_source() call installs them for good, as the tracing process wants)
    assert {name: sys.modules.get(name) for name in names} == before
    if before["nki"] is None:
        assert importlib.util.find_spec("nki") is None  # nothing installed where an SDK would be


def test_a_latency_below_the_speed_of_light_bound_is_refused_as_implausible():
    from autocomp_trn.problems.spec import Work

    impossible = DOUBLE.__class__(**{**DOUBLE.__dict__, "work": lambda ins: Work(hbm_bytes=1e12)})
    result = run(
        """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
""",
        impossible,
    )
    assert (
        result["status"] == "impossible_result"
        and "below the speed-of-light bound" in result["message"]
    )
