"""A kernel's CompileConfig on the trusted side: ``trace["compile_config"]`` is checked again from
scratch and applied to the schedule as the docs say ("Deep dive: NKI compile configuration"):
under NKI allocation a load into a tile waits for the reads of the tile that held its address
before, unless ``prefetch_auto`` rings it; ``split_reused_buffers`` lets a load into a reused
buffer overlap the reads of the previous value. The traces come from real kernels, traced here,
with the config written into the trace by hand (as a candidate's tracing process records it)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trn_testkit import DOUBLE, HEADER, problem

from autocomp_trn.emulator import modules
from autocomp_trn.emulator.hardware import GENERATIONS
from autocomp_trn.emulator.tracer import MAX_EVENTS
from autocomp_trn.judge import emulate, judge
from autocomp_trn.problems.spec import Input
from autocomp_trn.runtime.trace_main import trace_source

WIDE = problem(
    [Input("x", (128, 4096))], [((128, 4096), "float32")], lambda x: (2 * (x - np.exp(x)),)
)

# Eight [128, 512] chunks, each loaded, exponentiated and stored: the load of chunk j+1 can run
# while chunk j is computed, unless it has to wait for chunk j's reads. OUTSIDE/INSIDE: where the
# load's destination is declared.
PIPELINE = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    OUTSIDE
    for j in nl.sequential_range(8):
        INSIDE
        buf[...] = nl.load(x[:, j * 512:(j + 1) * 512])
        y = nl.exp(buf)
        nl.store(out[:, j * 512:(j + 1) * 512], value=nl.multiply(nl.subtract(buf, y), 2.0))
    return out
"""
DECL = "buf = nl.ndarray((128, 512), dtype=nl.float32)"
INSIDE = PIPELINE.replace("OUTSIDE", "").replace("INSIDE", DECL)
OUTSIDE = PIPELINE.replace("OUTSIDE", DECL).replace("INSIDE", "")
# one tile, no loop: no tile is ever allocated twice, nor loaded twice
SINGLE = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""


def traced(body: str, spec, generation: str = "trn2") -> dict:
    gen = GENERATIONS[generation]
    with modules.installed(generation, gen.sbuf_bytes_per_partition):
        status, trace = trace_source(
            HEADER + body,
            spec.entry,
            [[i.name, list(i.shape), i.dtype] for i in spec.inputs],
            spec.kwargs,
            generation,
            gen.sbuf_bytes_per_partition,
            MAX_EVENTS,
        )
    assert trace is not None, status
    return json.loads(trace)


def judged(body: str, spec=WIDE, config: dict | None = None, generation: str = "trn2") -> dict:
    trace = traced(body, spec, generation)
    if config is not None:
        trace["compile_config"] = config
    return judge(spec, json.dumps(trace), [5], generation)


def latency(body: str, spec=WIDE, config: dict | None = None) -> float:
    verdict = judged(body, spec, config)
    assert verdict["status"] == "ok", verdict
    return verdict["latency_us"]


LINEAR = {"allocation": "linear"}


def test_no_config_and_the_default_allocation_price_alike():
    for body in (INSIDE, OUTSIDE):
        assert latency(body, config={"allocation": "coloring"}) == latency(body)


def test_under_nki_allocation_a_load_waits_for_the_reads_of_the_tile_it_replaces():
    default, linear = latency(INSIDE), latency(INSIDE, config=LINEAR)
    assert linear > 1.1 * default  # each chunk's load waits for the previous chunk's compute
    # prefetch_auto puts the loads' destinations in a ring: the overlap comes back
    assert latency(INSIDE, config={**LINEAR, "prefetch_auto": True}) == pytest.approx(default)
    # opt_level O2 turns prefetch_auto on, unless the kernel turns it off
    assert latency(INSIDE, config={**LINEAR, "opt_level": "o2"}) == pytest.approx(default)
    assert latency(
        INSIDE, config={**LINEAR, "opt_level": "o2", "prefetch_auto": False}
    ) == pytest.approx(linear)


def test_split_reused_buffers_lets_a_load_into_a_reused_buffer_overlap_the_compute():
    default = latency(OUTSIDE)
    assert latency(OUTSIDE, config=LINEAR) == pytest.approx(default)  # one tile: no new address
    split = latency(OUTSIDE, config={**LINEAR, "split_reused_buffers": True})
    assert split < 0.9 * default
    # prefetch_auto does not help a load that waits for reads of the tensor it writes itself
    assert latency(OUTSIDE, config={**LINEAR, "prefetch_auto": True}) == pytest.approx(default)


def test_a_kernel_with_nothing_reused_is_not_moved_by_the_options():
    everything = {**LINEAR, "prefetch_auto": True, "split_reused_buffers": True}
    for config in (LINEAR, everything):
        assert latency(SINGLE, DOUBLE, config) == pytest.approx(latency(SINGLE, DOUBLE))


def test_the_feedback_names_the_config_and_the_options_not_modelled():
    verdict = judged(INSIDE, config={**LINEAR, "scheduling": True, "tensor_copy_elim": True})
    assert verdict["status"] == "ok", verdict
    assert (
        "CompileConfig: allocation=linear, scheduling=true, tensor_copy_elim=true"
        in verdict["summary"]
    )
    limits = {item["limit"]: item["detail"] for item in verdict["model_limits"]}
    assert "scheduling, tensor_copy_elim" in limits["compile_config"]
    # with only modelled options set, the limit does not fire
    verdict = judged(INSIDE, config={**LINEAR, "prefetch_auto": True})
    assert "compile_config" not in {item["limit"] for item in verdict["model_limits"]}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"scheduling": True}, "scheduling=True needs an allocation"),
        (
            {"allocation": "coloring", "scheduling": True},
            "scheduling=True needs allocation=Allocation.LINEAR",
        ),
        ({"prefetch_auto": True}, "prefetch_auto acts only when NKI allocates"),
        ({**LINEAR, "engine_balancing": True}, "engine_balancing acts only when NKI schedules"),
        ({"allocation": "greedy"}, "allocation='greedy' is not one of"),
        ({**LINEAR, "prefetch_auto": 1}, "prefetch_auto must be True or False"),
        ({"prefetch_everything": True}, "unexpected option 'prefetch_everything'"),
        (["allocation", "linear"], "compile_config must be a JSON object"),
    ],
)
def test_a_config_the_docs_refuse_is_refused_in_one_line(config, message):
    verdict = judged(SINGLE, DOUBLE, config)
    assert verdict["status"] == "compile_error", verdict
    assert verdict["code"] == "err_compile_config"
    assert message in verdict["message"] and "\n" not in verdict["message"]


# The same pipeline in the current API, carrying its config as the kernel writes it.
CURRENT = """import nki
import nki.isa as nisa
import nki.language as nl
from nki.compiler import Allocation, CompileConfig


@nki.jit(CONFIG)
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(8):
        buf = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=buf, src=x[:, j * 512:(j + 1) * 512])
        y = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=y, op=nl.exp, data=buf)
        z = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=z, data1=buf, data2=y, op=nl.subtract)
        w = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=w, data=z, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[:, j * 512:(j + 1) * 512], src=w)
    return out
"""


def test_a_current_api_kernel_carries_its_config_end_to_end():
    def evaluated(config: str) -> dict:
        return emulate(WIDE, CURRENT.replace("CONFIG", config), generation="trn2")

    default = evaluated("")
    linear = evaluated("compile_config=CompileConfig(allocation=Allocation.LINEAR)")
    prefetch = evaluated(
        "compile_config=CompileConfig(allocation=Allocation.LINEAR, prefetch_auto=True)"
    )
    assert all(v["status"] == "ok" for v in (default, linear, prefetch))
    assert linear["latency_us"] > 1.1 * default["latency_us"]
    assert prefetch["latency_us"] == pytest.approx(default["latency_us"])
    assert "CompileConfig: allocation=linear, prefetch_auto=true" in prefetch["summary"]
    refused = evaluated("compile_config=CompileConfig(scheduling=True)")
    assert refused["status"] == "compile_error"
    assert "scheduling=True needs an allocation" in refused["message"]
