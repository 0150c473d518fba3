"""The feedback states the timing model's known limits where they matter for the program at hand
(model_limits.py), and the evaluation records them in verification["model_limits"].

Each limit is shown firing on one real program and staying quiet on another, through the whole
evaluator (clang-19, Spike, the compiled model): the problem's unoptimized baseline (primitive
commands, one 16-column tile per mvin), the software library (the LOOP_WS loop engine)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from autocomp_gemmini import model_limits
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.model.timing import TimingParams

from autocomp_core import EvalContext, EvalResult

SECTION = "Model limits that apply to this program"


def evaluate(backend: GemminiBackend, problem_id: str, program: str) -> EvalResult:
    problem = backend.load_problem(problem_id)
    if program == "baseline":
        code = problem.baseline_path.read_text()
    else:
        code = Path(problem.metadata["vendor_path"]).read_text()
    result = asyncio.run(backend.evaluate(problem, code, EvalContext(seed=1, timeout_s=300)))
    assert result.correct, result.feedback
    return result


def names(result: EvalResult) -> list[str]:
    return [item["limit"] for item in result.verification["model_limits"]]


@pytest.fixture(scope="module")
def backend() -> GemminiBackend:
    return GemminiBackend()


@pytest.fixture(scope="module")
def baseline(backend) -> EvalResult:
    return evaluate(backend, "gemm-64x64x64", "baseline")


@pytest.fixture(scope="module")
def library(backend) -> EvalResult:
    return evaluate(backend, "gemm-64x64x64", "vendor")


def test_the_recorded_list_and_the_feedback_say_the_same(baseline, library):
    for result in (baseline, library):
        limits = result.verification["model_limits"]
        assert limits and all(set(item) == {"limit", "detail"} for item in limits)
        section = result.feedback[result.feedback.index(SECTION) :].splitlines()
        assert section[1:] == [f"- {item['detail']}" for item in limits]
        # the evaluation's other records are still there beside them
        assert result.verification["seeds"] and result.verification["checks"]


def test_narrow_dma_rows(baseline, library):
    # the baseline moves 16-byte rows: A and B, 64 mvins of 16 rows each, and C, 16 mvouts of 16
    # rows (its bias rows are 16 int32, 64 bytes: not narrow): 2304 rows under 40 bytes
    assert "dma_requests_in_flight" in names(baseline)
    assert "2304 rows moved by mvin/mvout are narrower than 40 bytes" in baseline.feedback
    assert "at most 16 memory requests in flight" in baseline.feedback
    # the library issues no mvin or mvout of its own (the loop engine moves the data)
    assert "dma_requests_in_flight" not in names(library)
    assert "DMA requests in flight" not in library.feedback


def test_loop_engine_issue(baseline, library):
    assert "loop_engine_reservation_station" in names(library)
    assert "the commands LOOP_WS unrolls enter" in library.feedback
    assert "loop_engine_reservation_station" not in names(baseline)
    assert "loop engine issue" not in baseline.feedback


def test_reservation_station(baseline, library):
    # the baseline issues ~300 commands from the CPU into 8/8/4-deep queues
    assert "reservation_station" in names(baseline)
    assert "on full command queues" in baseline.feedback
    assert "reservation_station" not in names(library)
    assert "reservation station:" not in library.feedback


def test_memory_latency(backend, baseline):
    assert "memory_latency" in names(baseline)
    assert "the DMA's memory latency, 40 cycles, a model parameter" in baseline.feedback
    # the library on a large GEMM keeps the array busy (96% of peak): its operands are waiting
    large = evaluate(backend, "gemm-256x256x256", "vendor")
    assert "memory_latency" not in names(large)
    assert "memory latency:" not in large.feedback


def test_memory_bandwidth(baseline, library):
    # the library's load unit is busy most of the time on the small GEMM; the baseline's is not
    assert "memory_bandwidth" in names(library)
    assert "cache misses, DRAM bandwidth and contention with the CPU are not" in library.feedback
    assert "memory_bandwidth" not in names(baseline)
    assert "memory system:" not in baseline.feedback


def test_recorded_without_feedback(backend):
    """The list is recorded when the search asks for no feedback text too."""
    problem = backend.load_problem("gemm-64x64x64")
    ctx = EvalContext(seed=1, timeout_s=300, want_feedback=False)
    result = asyncio.run(backend.evaluate(problem, problem.baseline_path.read_text(), ctx))
    assert result.correct and result.feedback == ""
    assert "dma_requests_in_flight" in names(result)


def test_the_python_model_records_the_same_dma_rows(backend, baseline, monkeypatch):
    monkeypatch.setenv("AUTOCOMP_GEMMINI_MODEL", "python")
    python = evaluate(backend, "gemm-64x64x64", "baseline")
    assert python.verification["model_limits"] == baseline.verification["model_limits"]


def results(dma_rows: dict[str, int], cycles: float = 1000.0) -> dict:
    """The parts of results.json the detectors read, for a run that only moved rows."""
    timing = dict.fromkeys(
        ("load_busy_cycles", "store_busy_cycles", "ex_dep_wait_cycles", "stall_queue_full_cycles"),
        0.0,
    )
    moved = sum(int(width) * rows for width, rows in dma_rows.items())
    return {
        "cycles": cycles,
        "commands": {},
        "dma_rows": dma_rows,
        "bytes_in": moved,
        "bytes_out": 0,
        "timing": timing,
    }


def test_the_narrow_row_width_follows_the_timing_parameters():
    """A row is narrow when 16 requests in flight cannot carry the bus's bytes over one latency:
    under latency * bus / 16 bytes (40 with the shipped parameters)."""
    shipped = TimingParams()
    assert [item["limit"] for item in model_limits.applying(results({"32": 200}), shipped)] == [
        "dma_requests_in_flight"
    ]
    assert model_limits.applying(results({"48": 200}), shipped) == []  # 3 cycles a row >= 2.5
    assert model_limits.applying(results({"64": 200}), shipped) == []
    # a memory latency of 16 cycles: 16 requests keep the bus busy even with 16-byte rows
    fast = TimingParams(dma_latency=16)
    assert model_limits.applying(results({"16": 200}), fast) == []
    # a few narrow rows in a long run stay under the 5% that makes the limit worth stating
    assert model_limits.applying(results({"16": 20}, cycles=1000.0), shipped) == []
