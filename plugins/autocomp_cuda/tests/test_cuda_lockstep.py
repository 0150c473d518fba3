"""The baseline's and the candidate's timing workers driven in lock-step by the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocomp_cuda import lockstep
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
    handed: list[tuple[Path, int, int]] = []
    hand_over_job = lockstep.Worker.hand_over
    hand_over_call = protocol.hand_over

    def record_job(self, job):
        jobs.append(json.loads(json.dumps(job)))
        return hand_over_job(self, job)

    def record_call(work: Path, r: int, seed: int) -> None:
        # the worker's previous call is done, and nothing of a later call exists yet
        assert r == 0 or protocol.done_path(work, r - 1).exists()
        assert not list(work.glob("call-*.json"))
        handed.append((work, r, seed))
        hand_over_call(work, r, seed)

    monkeypatch.setattr(lockstep.Worker, "hand_over", record_job)
    monkeypatch.setattr(protocol, "hand_over", record_call)
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
    # call r to the baseline, then to the candidate, with the same seed, for every r
    assert handed == [
        (workers[mode], r, seed) for r, seed in enumerate(seeds) for mode in ("baseline", "eval")
    ]


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


def test_a_call_reported_longer_than_the_engine_saw_is_overstated():
    assert lockstep.overstated_calls([1.0, 5.0, 2.0], [3.0, 0.2, 2.5]) == [1]
    assert lockstep.overstated_calls([1.0, 2.0], [1.5, 2.5]) == []
