"""``autocomp-core optimize`` on the cuda backend, end to end: a real engine subprocess, an LLM
protocol server on 127.0.0.1 whose "model" proposes an honest fused C++ kernel, a hack and a
broken file, and the real harness judging each on the CPU device."""

from __future__ import annotations

import json
import subprocess

import pytest
from autocomp_core.api import optimize_async
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing import LLMTestServer, Proposals, optimize_args, preloaded_cli

from autocomp_cuda.adversarial import ROOT as ADV
from autocomp_cuda.harness.children import Children

PROPOSALS = {
    "fuse everything into one C++ loop": (
        ADV / "honest" / "fused_scale_bias_clamp_cpp.py"
    ).read_text(),
    "skip the work and return zeros": (
        "import torch\nimport torch.nn as nn\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self, cols):\n"
        "        super().__init__()\n"
        "    def forward(self, x, gate, residual):\n"
        "        return torch.zeros_like(x)\n"
    ),
    "rewrite with a typo": "import torch\nclass ModelNew(torch.nn.Module)\n    pass\n",
}


respond = Proposals(PROPOSALS, fallback="rewrite with a typo")


def test_optimize_on_the_cpu_device_keeps_the_honest_kernel_and_refuses_the_rest(
    tmp_path, cuda_cache
):
    server = LLMTestServer(respond).start_in_thread()
    try:
        run_dir = tmp_path / "run"
        done = subprocess.run(
            [
                *preloaded_cli(),
                *optimize_args(
                    "cuda",
                    "L2/scale_bias_clamp_mul",
                    f"openai-compatible@{server.openai_base_url}::scripted",
                    str(run_dir),
                    plans=6,
                    sets=[
                        f"backend_options.cache_dir={json.dumps(str(cuda_cache))}",
                        "backend_options.reps=5",
                    ],
                ),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        server.stop_thread()
    assert done.returncode == 0, done.stderr[-3000:]
    store = RunStore(run_dir)
    root = next(cand.code for cand in store.candidates() if cand.origin == "root")
    store.close()
    assert respond.verdicts(run_dir) == {
        "fuse everything into one C++ loop": (True, "status: ok"),
        "skip the work and return zeros": (False, "status: mismatch"),
        "rewrite with a typo": (False, "status: compile_error"),
    }
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["problem"] == "L2/scale_bias_clamp_mul"
    # The best program is the baseline or the fused kernel, whichever measured faster here.
    best = (run_dir / "best.py").read_text().strip()
    assert best in {PROPOSALS["fuse everything into one C++ loop"].strip(), root.strip()}


@pytest.mark.asyncio
async def test_the_engine_shuts_the_warm_workers_down_when_the_run_ends(
    tmp_path, cuda_cache, monkeypatch
):
    """Warm workers end with the run, through the backend's lifecycle (``aclose``), not when
    their idle timeout runs out minutes later."""
    started = []
    start_worker = Children.start_worker

    def record(self, gpu):
        worker = start_worker(self, gpu)
        started.append(worker)
        return worker

    monkeypatch.setattr(Children, "start_worker", record)
    relu = (
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return torch.clamp(x, min=0)\n"
    )

    def reply(request) -> str:
        return (
            "use clamp" if request.prompt.rstrip().endswith("Plan:") else f"```python\n{relu}```\n"
        )

    async with LLMTestServer(reply) as server:
        summary = await optimize_async(
            {
                "backend": "cuda",
                "problem": "L1/relu",
                "run_dir": str(tmp_path / "run"),
                "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
                "search": {
                    "iterations": 1,
                    "beam_size": 1,
                    "plans_per_candidate": 1,
                    "codes_per_plan": 1,
                    # the held-out check would add an evaluation only when the candidate wins
                    "held_out": False,
                },
                "backend_options": {"cache_dir": str(cuda_cache), "reps": 4, "standby_idle_s": 600},
            }
        )
    assert summary.data["evaluations"] == 2
    assert len(started) >= 3  # each evaluation's worker, and a standby one waiting after the last
    assert all(worker.task.done() for worker in started)
    assert not any(worker.work.exists() for worker in started if not worker.dispatched)
