"""The baseline's and the candidate's timing workers driven in lock-step by the engine."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import statistics
import types
from pathlib import Path

import pytest

from autocomp_cuda import lockstep, worker_memory
from autocomp_cuda.harness import judging
from autocomp_cuda.runtime import lockstep as protocol

RELU = (
    "import torch\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
)
# Honest through its trials and warm-up calls (5 + 2), then stuck in its first timed call.
STUCK_IN_TIMING = (
    "import time\nimport torch\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n"
    "    calls = 0\n"
    "    def forward(self, x):\n"
    "        ModelNew.calls += 1\n"
    "        if ModelNew.calls > 7:\n"
    "            time.sleep(3600)\n"
    "        return torch.relu(x)\n"
)


@pytest.mark.asyncio
async def test_each_seed_reaches_each_worker_only_when_its_call_is_due(make_backend, monkeypatch):
    backend = make_backend("cpu")
    harness, spec = backend.harness, backend.spec("L1/relu")
    jobs: list[dict] = []
    ordered: list[tuple[Path, int, str, int]] = []
    told: list[tuple[Path, str]] = []
    hand_over_job = lockstep.Worker.hand_over
    order, tell = protocol.EngineEnds.order, protocol.EngineEnds.tell

    def record_job(self, job):
        jobs.append(json.loads(json.dumps(job)))
        return hand_over_job(self, job)

    def record_order(self, r: int, who: str, seed: int) -> None:
        ordered.append((self.work, r, who, seed))
        order(self, r, who, seed)

    def record_tell(self, line: str) -> None:
        told.append((self.work, line))
        tell(self, line)

    monkeypatch.setattr(lockstep.Worker, "hand_over", record_job)
    monkeypatch.setattr(protocol.EngineEnds, "order", record_order)
    monkeypatch.setattr(protocol.EngineEnds, "tell", record_tell)
    try:
        verdict = await harness.evaluate(spec, RELU)
    finally:
        await harness.aclose()
    assert verdict.status == "ok", verdict.message
    seeds = verdict.info["timed_seeds"]
    timed_jobs = [j for j in jobs if j.get("timing")]
    assert sorted(j["mode"] for j in timed_jobs) == ["baseline", "eval"]
    # no worker is told any timed seed up front: each comes with its own call
    assert all(set(j["timing"]) == {"warmup", "reps", "compile_baseline"} for j in timed_jobs)
    assert not any(str(s) in json.dumps(j) for j in timed_jobs for s in seeds)
    workers = {job["mode"]: Path(job["work_dir"]) for job in timed_jobs}
    # call r of the baseline and of the candidate before any call r + 1; on the CPU device the
    # seed of call r reaches the baseline's worker alone, when call r is due (it draws the
    # inputs, which the engine writes into both workers): the candidate's worker never learns it
    assert [r for _, r, _, _ in ordered] == sorted(r for _, r, _, _ in ordered)
    assert sorted(ordered) == sorted(
        [(workers["baseline"], r, "base", 0) for r in range(len(seeds))]
        + [(workers["eval"], r, "cand", 0) for r in range(len(seeds))]
    )
    draws = [line for work, line in told if line.startswith(protocol.DRAW)]
    assert draws == [f"{protocol.DRAW} {r} {seed}" for r, seed in enumerate(seeds)]
    assert all(work == workers["baseline"] for work, line in told if line in draws)
    # the metric is the engine's clock; the worker's own report is kept beside it
    assert verdict.candidate_ms > 0 and verdict.info["candidate_reported_ms"] > 0
    # no harness step of the GPU's runs around the calls on the CPU device: each call is the
    # order, a ping, "go" (the inputs written by then) and "describe", clocked end to end
    assert not any(line in (protocol.FLUSH, protocol.KEEP) for _, line in told)
    for mode, who in (("baseline", "base"), ("eval", "cand")):
        around = [line for w, line in told if w == workers[mode] and line not in draws]
        calls = [
            line
            for r in range(len(seeds))
            for line in (f"{r} {who} 0", protocol.PING, protocol.GO, protocol.DESCRIBE)
        ]
        assert around == calls + [protocol.SETTLE]
    assert set(verdict.info["harness_steps_ms"]) == set(lockstep.MOVED_STEPS)
    assert verdict.info["steady_heap"] is True  # one heap policy in every timing worker


@pytest.mark.asyncio
async def test_a_candidate_stuck_in_a_timed_call_is_a_timeout_not_a_hang(make_backend):
    backend = make_backend("cpu", timing_timeout_s=3)
    harness, spec = backend.harness, backend.spec("L1/relu")
    try:
        verdict = await harness.evaluate(spec, STUCK_IN_TIMING)
    finally:
        await harness.aclose()
    assert verdict.status == "timeout", verdict.message
    assert "timing" in verdict.message


def test_the_candidate_is_charged_its_window_less_the_baselines_harness_share():
    # baseline windows 5, 6, 7 ms around calls of 3, 3.5, 4 ms: the harness's share is 2.5
    assert lockstep.candidate_ms([4.0, 12.5, 1.0], [5.0, 6.0, 7.0], [3.0, 3.5, 4.0]) == [
        1.5,
        10.0,
        0.0,
    ]


def _steps(cand: dict[str, list[float]], base: dict[str, list[float]]) -> lockstep.Drive:
    return lockstep.Drive("complete", steps_ms={"cand": cand, "base": base})


def test_a_harness_step_far_below_the_baselines_was_skipped():
    base = {"inputs": [0.40, 0.35, 0.38], "flush": [0.90, 0.85, 0.88], "keep": [0.25] * 3}
    emptied = {**base, "flush": [0.20, 0.19, 0.90]}  # the flush's buffer emptied after call 1
    assert lockstep.skipped_steps(_steps(emptied, base)) == [("flush", 0.20, 0.88)]
    honest = {"inputs": [0.33, 0.36, 0.31], "flush": [0.80, 0.95, 0.70], "keep": [0.29] * 3}
    assert lockstep.skipped_steps(_steps(honest, base)) == []


def test_work_moved_into_a_harness_step_is_charged_and_no_step_is_credited():
    base = {"inputs": [0.40, 0.35, 0.38], "flush": [0.90, 0.85, 0.88], "keep": [0.25] * 3}
    # 0.5 ms of work in the inputs step; a flush a little cheaper gives nothing back
    cand = {**base, "inputs": [0.90, 0.85, 0.88], "flush": [0.70, 0.70, 0.70]}
    charged = lockstep.charged_ms(_steps(cand, base), [1.0, 1.0, 1.0])
    assert statistics.median(charged) == pytest.approx(1.5)
    assert lockstep.charged_ms(_steps(base, base), [1.0, 2.0]) == [1.0, 2.0]


def test_work_rotated_through_the_harness_steps_is_charged_in_full():
    base = {"inputs": [0.40] * 3, "flush": [0.90] * 3, "keep": [0.25] * 3}
    # 0.6 ms of work in one step per call, a different step each call: every step's median
    # of differences is 0, the work 0.6 ms a call all the same
    cand = {
        "inputs": [1.00, 0.40, 0.40],
        "flush": [0.90, 1.50, 0.90],
        "keep": [0.25, 0.25, 0.85],
    }
    assert lockstep.charged_ms(_steps(cand, base), [1.0] * 3) == pytest.approx([1.6] * 3)


def test_work_moved_out_of_the_window_on_some_calls_is_charged_call_by_call():
    # (the sixth meter red team's a02: the call done in forward on 19 calls of 40, and in the
    # describe step on the other 21: the windows' median is glue, a mean of the steps' excess
    # charged 21/40 of the work)
    windows = [1.0] * 19 + [0.0] * 21
    base = {"arm": [0.07] * 40, "ping": [0.02] * 40, "describe": [0.08] * 40}
    cand = {**base, "describe": [0.08] * 19 + [1.08] * 21}
    charged = lockstep.charged_ms(_steps(cand, base), windows)
    assert statistics.median(charged) == pytest.approx(1.0)
    # a leaner describe step than the baseline's credits nothing
    lean = {**base, "describe": [0.03] * 40}
    assert lockstep.charged_ms(_steps(lean, base), windows) == pytest.approx(windows)


def test_a_faster_call_within_the_shavable_glue_is_below_resolution_with_its_floor():
    def calls(median: float, iqr: float) -> list[float]:  # (40 calls, that median and IQR)
        return [median - iqr] * 10 + [median - iqr / 2] * 10 + [median + iqr / 2] * 20

    # the eleventh red team's honest fused C++ kernel: 1.66x at 0.10 ms, 0.0164 ms shavable
    floor, note = judging.glue_resolution(calls(0.0998, 0.01), calls(0.1658, 0.01), 0.0164)
    assert 1.3 < floor < 1.43 and "excluded from fast_p" in note and f"{floor:.2f}x" in note
    # a lean serving loop around the baseline's own work (h63): faster by the glue alone
    floor, _ = judging.glue_resolution(calls(0.040, 0.005), calls(0.050, 0.005), 0.0164)
    assert floor <= 1.0
    # ... or by the noise of a loaded machine (a non-root suite: 1.51x, IQR 0.081 ms)
    floor, _ = judging.glue_resolution(calls(0.0604, 0.081), calls(0.0914, 0.06), 0.021)
    assert floor <= 1.0
    # a call long enough, or not faster: nothing to say
    assert judging.glue_resolution(calls(0.5, 0.01), calls(1.0, 0.01), 0.0164) == (
        float("inf"),
        "",
    )
    assert judging.glue_resolution(calls(0.06, 0.01), calls(0.05, 0.01), 0.0164)[1] == ""


def test_a_call_reported_longer_than_the_engine_saw_is_overstated():
    assert lockstep.overstated_calls([1.0, 5.0, 2.0], [3.0, 0.2, 2.5]) == [1]
    assert lockstep.overstated_calls([1.0, 2.0], [1.5, 2.5]) == []


def test_the_engine_takes_one_connection_and_knows_its_process(tmp_path, monkeypatch):
    # a work dir whose socket path is longer than a socket address may be (107 bytes)
    work = tmp_path / ("w" * 120)
    work.mkdir()
    engine = protocol.EngineEnds(work)
    monkeypatch.chdir(work)
    worker = protocol.WorkerEnds(work)
    engine.accept(5.0)
    assert engine.pid == os.getpid()
    with pytest.raises(OSError):  # the listener is gone: no one else connects later
        protocol.WorkerEnds(work)
    engine.order(0, "cand", 7)
    assert worker.next_order() == (0, "cand", 7)
    worker.report_done(0, "cand", "ab" * 32)
    assert engine.lines.receive() == f"0 cand {'ab' * 32}"
    engine.close()


def test_an_output_laid_partly_over_an_input_buffer_is_refused():
    # (the third meter red team's a12: input x's buffer declared inside the output, so the
    # engine's write of x did the copying half of cat([x, relu(y)]) for the candidate)
    ends = {"candidate": types.SimpleNamespace(pid=os.getpid())}  # (its maps: this process's)
    driver = lockstep._Driver(ends, {}, 0.0, False, lockstep.Drive("complete"))
    driver.layouts["candidate"] = {"inputs": [(4096, 400), (8192, 400)]}

    def output(address: int, elements: int) -> worker_memory.Output:
        return worker_memory.Output(address, "torch.float32", (elements,), (1,))

    with pytest.raises(lockstep._Stop, match="partly over its input 1"):
        driver._not_over_its_inputs("candidate", 0, output(4096, 200))  # x, then relu(y)
    driver._not_over_its_inputs("candidate", 0, output(4096, 100))  # a view of x: allowed
    driver._not_over_its_inputs("candidate", 0, output(16384, 200))  # memory of its own


def test_an_input_buffer_outside_private_anonymous_memory_is_refused():
    # (the fifth meter red team's a03: the input's pages and the output's mapped shared from
    # one memfd only while the engine wrote the inputs, privately by the time it looked)
    ends = {"candidate": types.SimpleNamespace(pid=os.getpid())}  # (its maps: this process's)
    driver = lockstep._Driver(ends, {}, 0.0, False, lockstep.Drive("complete"))
    fd = os.memfd_create("inputs")
    os.ftruncate(fd, 8192)
    behind_a_file = mmap.mmap(fd, 8192, mmap.MAP_PRIVATE)
    heap = bytearray(8192)
    try:
        in_file = ctypes.addressof(ctypes.c_char.from_buffer(behind_a_file))
        in_heap = ctypes.addressof(ctypes.c_char.from_buffer(heap))
        elsewhere = worker_memory.Output(in_heap, "torch.float32", (4,), (1,))
        driver.layouts["candidate"] = {"inputs": [(in_heap, 4096), (in_file, 4096)]}
        with pytest.raises(lockstep._Stop, match="input 2's buffer is not in private anonymous"):
            driver._not_over_its_inputs("candidate", 0, elsewhere)
        driver.layouts["candidate"] = {"inputs": [(in_heap, 4096)]}
        driver._not_over_its_inputs("candidate", 0, elsewhere)
    finally:
        behind_a_file.close()
        os.close(fd)


IN_PLACE_PROBLEM = '''"""In-place ReLU: the program updates its input and returns it."""
import torch
import torch.nn as nn

ROWS = 64
COLS = 128


class Model(nn.Module):
    def forward(self, x):
        return torch.relu_(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"ROWS": 64, "COLS": 128}, "flops": "ROWS*COLS", "in_place": True}
'''
IN_PLACE_RELU = RELU.replace("torch.relu(x)", "torch.relu_(x)")


@pytest.mark.asyncio
async def test_a_call_may_change_its_inputs_only_where_the_problem_works_in_place(
    make_backend, tmp_path
):
    # (the fifth meter red team's h04: the in-place problem's own program was refused because
    # each timed call changed its input)
    problem = tmp_path / "relu_in_place.py"
    problem.write_text(IN_PLACE_PROBLEM)
    backend = make_backend("cpu")
    harness = backend.harness
    try:
        in_place = await harness.evaluate(backend.spec(str(problem)), IN_PLACE_RELU)
        elsewhere = await harness.evaluate(backend.spec("L1/relu"), IN_PLACE_RELU)
    finally:
        await harness.aclose()
    assert in_place.status == "ok", in_place.message
    assert elsewhere.status == "hack_suspected", elsewhere.message
