"""``nl.fori_loop`` (and ``nl.while_loop``) as the device runs it: the body is compiled once, so
the replay refuses a body whose iterations differ (a Python branch on the loop index) and gives
each tile the body allocates one buffer, shared by every iteration (iteration k+1 writes it after
iteration k has read it). Kernels run through the real tracing code and the trusted replay."""

from __future__ import annotations

import copy
import json

import pytest
from trn_testkit import problem

from autocomp_trn.emulator import modules
from autocomp_trn.emulator.hardware import GENERATIONS
from autocomp_trn.emulator.replay.loop import Replayer
from autocomp_trn.emulator.replay.state import TraceRefused
from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input
from autocomp_trn.runtime.trace_main import trace_source

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
N, W = 8, 512  # chunks, columns per chunk
#: y = relu(x) * 2 over [128, N * W], one chunk per iteration
SCALE = problem(
    [Input("x", (128, N * W))], [((128, N * W), "float32")], lambda x: (2 * (x * (x > 0)),)
)

#: the kernel; {loop} runs body(j) for j in range(N), {alloc} is where the tiles are made
KERNEL = (
    HEADER
    + """
@nki.jit
def solution(x):
    out = nl.ndarray((128, {n} * {w}), dtype=nl.float32, buffer=nl.shared_hbm)
{hoisted}
    def body(j):
{local}
        nisa.dma_copy(dst=t, src=x[:, {cols}])
        nisa.activation(dst=t, op=nl.relu, data=t)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0{engine})
        nisa.dma_copy(dst=out[:, {cols}], src=u)

{loop}
    return out
"""
)
TILES = (
    "t = nl.ndarray((128, {w}), dtype=nl.float32, buffer=nl.sbuf)\n"
    "u = nl.ndarray((128, {w}), dtype=nl.float32, buffer=nl.sbuf)"
)
FORI = "    nl.fori_loop(0, {n}, body)"
UNROLL = "    nl.fori_loop(0, {n}, body, unroll=True)"
PYTHON = "    for j in range({n}):\n        body(j)"
#: a Python decision on the loop index: on device the index is a register
BRANCH = ", engine=nisa.vector_engine if j % 2 == 0 else nisa.gpsimd_engine"
AFFINE = "j * {w} : (j + 1) * {w}"
#: the same instructions and shapes each iteration, at offsets not affine in j (a permutation)
SHUFFLED = "(j * 3 % {n}) * {w} : (j * 3 % {n} + 1) * {w}"


def kernel(loop=FORI, local=True, engine="", cols=AFFINE) -> str:
    tiles = TILES.format(w=W)
    return KERNEL.format(
        n=N,
        w=W,
        hoisted="" if local else "    " + tiles.replace("\n", "\n    "),
        local=("        " + tiles.replace("\n", "\n        ")) if local else "        pass",
        engine=engine,
        cols=cols.format(w=W, n=N),
        loop=loop.format(n=N),
    )


def latency(source: str) -> float:
    result = emulate(SCALE, source, generation="trn2")
    assert result["status"] == "ok", result
    return result["latency_us"]


def test_a_fori_loop_body_that_branches_on_the_index_is_refused_in_one_line():
    result = emulate(SCALE, kernel(engine=BRANCH), generation="trn2")
    assert result["status"] == "compile_error"
    assert result["code"] == "err_dynamic_control_flow_not_supported"
    assert (
        "a fori_loop body is compiled once: it may not branch on the loop index in Python"
        in (result["message"])
    )
    assert "iteration 1 differs from iteration 0" in result["message"]
    assert "\n" not in result["message"]


def test_a_fori_loop_body_whose_offsets_are_not_affine_in_the_index_is_refused():
    result = emulate(SCALE, kernel(cols=SHUFFLED), generation="trn2")
    assert result["code"] == "err_dynamic_control_flow_not_supported"
    assert "not affine in the index" in result["message"]


def test_an_unrolled_fori_loop_and_a_python_loop_may_branch_on_the_index():
    for loop in (UNROLL, PYTHON):
        assert emulate(SCALE, kernel(loop=loop, engine=BRANCH), generation="trn2")["status"] == "ok"
        assert emulate(SCALE, kernel(loop=loop, cols=SHUFFLED), generation="trn2")["status"] == "ok"


def test_the_replay_refuses_a_trace_whose_fori_iterations_differ():
    """The trusted side checks the trace itself: an honest trace with one instruction of
    iteration 2 moved to another engine is refused."""
    with modules.installed("trn2"):  # trace_source installs the NKI modules for good
        status, text = trace_source(
            kernel(), "solution", [["x", [128, N * W], "float32"]], {}, "trn2", 192 * 1024, 100_000
        )
    assert status["status"] == "ok", status
    trace = json.loads(text)
    specs = [((128, N * W), "float32")]
    Replayer(trace, GENERATIONS["trn2"], specs, None).run()  # the honest trace replays
    tampered = copy.deepcopy(trace)
    events, iteration = tampered["events"], -1
    for e in events:
        if e[0] == "iter":
            iteration = e[1]
        if e[0] == "op" and e[1] == "tensor_scalar" and iteration == 2:
            e[4]["engine"] = "gpsimd" if e[4].get("engine") != "gpsimd" else "vector"
            break
    else:
        pytest.fail("no tensor_scalar in iteration 2")
    with pytest.raises(TraceRefused, match=r"fori_loop body is compiled once.*iteration 2"):
        Replayer(tampered, GENERATIONS["trn2"], specs, None).run()


def test_tiles_allocated_in_a_fori_body_share_one_buffer_across_iterations():
    """On device the body exists once, so its tiles have one address: the loop costs what it
    costs with the tiles made once outside the body, more than a Python loop whose every
    iteration gets fresh tiles and so overlaps the next."""
    local, hoisted = latency(kernel()), latency(kernel(local=False))
    python = latency(kernel(loop=PYTHON))
    assert local == pytest.approx(hoisted, rel=1e-9)
    assert python < 0.9 * local


def test_nested_fori_loops_are_checked_per_loop_and_share_the_body_tiles():
    nested = "    nl.fori_loop(0, 2, lambda i: nl.fori_loop(0, {n} // 2, lambda k: body(i * ({n} // 2) + k)))"
    assert latency(kernel(loop=nested)) == pytest.approx(latency(kernel()), rel=1e-9)
    once = ", engine=nisa.vector_engine if j == 5 else nisa.gpsimd_engine"  # i = 1, k = 1
    result = emulate(SCALE, kernel(loop=nested, engine=once), generation="trn2")
    assert result["code"] == "err_dynamic_control_flow_not_supported"
    assert "iteration 1 differs" in result["message"]


def test_a_while_loop_body_that_branches_on_its_state_is_refused():
    counted = "    nl.while_loop({n}, lambda r: (body({n} - r), r - 1)[1])"
    assert latency(kernel(loop=counted)) == pytest.approx(latency(kernel()), rel=1e-9)
    result = emulate(SCALE, kernel(loop=counted, engine=BRANCH), generation="trn2")
    assert result["code"] == "err_dynamic_control_flow_not_supported"
    assert "a while_loop body is compiled once" in result["message"]
