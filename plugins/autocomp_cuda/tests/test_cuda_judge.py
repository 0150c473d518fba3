"""Outputs are judged in a trusted process of their own: the engine never imports torch, and
the candidate's worker never sees a reference output."""

from __future__ import annotations

import json
import subprocess
import sys

ENGINE = """
import asyncio, json, sys
from autocomp_core import EvalContext
from autocomp_cuda.backend import CudaBackend

backend = CudaBackend(hardware={"device": "cpu"}, options={"cache_dir": sys.argv[1], "reps": 3, "warmup": 1})
problem = backend.load_problem("L1/relu")
backend.rules(problem)
wrong = problem.baseline_code.replace("torch.relu(x)", "torch.relu(x) * 1.01")


async def main():
    ctx = EvalContext()
    ok = await backend.evaluate(problem, problem.baseline_code, ctx)
    bad = await backend.evaluate(problem, wrong, ctx)
    crash = await backend.evaluate(problem, "import torch\\nclass ModelNew(torch.nn.Module):\\n"
                                   "    def forward(self, x):\\n        raise ValueError('boom')\\n", ctx)
    gate = await backend.check_problem("L1/relu")
    await backend.harness.aclose()
    return ok, bad, crash, gate


ok, bad, crash, gate = asyncio.run(main())
print(json.dumps({"ok": ok.correct, "bad": bad.feedback.splitlines()[0], "crash": crash.feedback.splitlines()[0],
                  "gate": gate.passed, "phases": sorted(ok.extra), "torch": "torch" in sys.modules}))
"""


def test_the_engine_process_never_imports_torch(cuda_cache):
    done = subprocess.run(
        [sys.executable, "-c", ENGINE, str(cuda_cache)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["ok"] and seen["gate"], seen
    assert seen["bad"] == "status: mismatch" and seen["crash"] == "status: runtime_error", seen
    assert seen["torch"] is False, "the engine process imported torch during an evaluation"
    # Where the evaluation's time went, phase by phase.
    assert {
        "eval_correctness_s",
        "eval_timing_s",
        "eval_output_write_s",
        "eval_judge_compare_s",
    } <= set(seen["phases"])


def test_triton_kernels_are_kept_per_candidate_code_never_shared_between_candidates(
    make_backend, tmp_path
):
    from autocomp_cuda.harness.files import keep_tree

    harness = make_backend("cuda").harness
    triton_a, triton_b = "import triton\n# a\n", "import triton\n# b\n"
    assert harness.builds.triton_cache(triton_a) == harness.builds.triton_cache(triton_a)
    assert harness.builds.triton_cache(triton_a) != harness.builds.triton_cache(triton_b)
    assert (
        harness.builds.triton_cache("import torch\n") is None
        and make_backend("cpu").harness.builds.triton_cache(triton_a) is None
    )
    # What a candidate leaves is copied as it is: a link to a file elsewhere stays a link.
    secret = tmp_path / "secret.txt"
    secret.write_text("not for candidates")
    left = tmp_path / "left"
    left.mkdir()
    (left / "kernel.cubin").write_bytes(b"\0" * 16)
    (left / "peek").symlink_to(secret)
    keep_tree(left, tmp_path / "kept")
    assert (tmp_path / "kept" / "kernel.cubin").is_file() and (
        tmp_path / "kept" / "peek"
    ).is_symlink()
