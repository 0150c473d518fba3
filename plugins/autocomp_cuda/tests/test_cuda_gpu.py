"""GPU-only checks (run by gpu_check.sh on a machine with an NVIDIA GPU)."""

from __future__ import annotations

import pytest
from autocomp_core.contract.backend import EvalContext

from autocomp_cuda.problemset import baseline_source

pytestmark = pytest.mark.gpu

FAULT = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
__global__ void bad(float* y) { y[(long)1 << 40] = 1.f; }
torch::Tensor f(torch::Tensor x) { auto y = torch::empty_like(x); bad<<<1, 1>>>(y.data_ptr<float>()); return y; }
"""
ext = load_inline("autocomp_fault", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources=CUDA, functions=["f"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
'''


@pytest.mark.asyncio
async def test_cuda_fault_is_its_own_status_and_next_worker_is_fresh(make_backend):
    backend = make_backend("cuda")
    problem = backend.load_problem("L1/relu")
    ctx = EvalContext()
    fault = await backend.evaluate(problem, FAULT, ctx)
    assert fault.feedback.startswith("status: cuda_fault"), fault.feedback
    ok = await backend.evaluate(problem, problem.baseline_code, ctx)
    assert ok.correct, ok.feedback


@pytest.mark.asyncio
async def test_full_size_baseline_on_gpu(make_backend):
    backend = make_backend("cuda", size="full", reps=10)
    problem = backend.load_problem("L2/scale_bias_clamp_mul")
    result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
    assert result.correct, result.feedback
    assert 0.5 < result.extra["speedup"] < 2.0


@pytest.mark.asyncio
async def test_cuda_kernel_is_accepted_with_ptxas_resources_in_its_feedback(make_backend):
    from autocomp_cuda.adversarial import ROOT as ADV

    backend = make_backend("cuda", size="full", reps=10)
    problem = backend.load_problem("L2/scale_bias_clamp_mul")
    code = (ADV / "honest" / "fused_scale_bias_clamp_cuda.py").read_text()
    result = await backend.evaluate(problem, code, EvalContext())
    assert result.correct, result.feedback
    assert "kernel fused_kernel(" in result.feedback and " registers" in result.feedback, (
        result.feedback
    )
    assert result.extra["excluded_from_fast_p"] == 0.0


HUGE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


rows = 1 << 20
cols = 1 << 20  # 4 TiB of float32


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""


@pytest.mark.asyncio
async def test_a_problem_too_big_for_the_gpu_is_refused_in_one_line_before_allocating(
    make_backend, tmp_path
):
    path = tmp_path / "huge.py"
    path.write_text(HUGE)
    report = await make_backend("cuda", size="full").check_problem(str(path))
    assert not report.passed and report.category == "too_big", report.reasons
    assert "of GPU memory" in report.reasons[0] and "\n" not in report.reasons[0], report.reasons


@pytest.mark.asyncio
async def test_verdicts_name_the_driver_and_where_the_time_went(make_backend):
    backend = make_backend("cuda", size="full", reps=5)
    spec = backend.spec("L2/scale_bias_clamp_mul")
    verdict = await backend.harness.evaluate(spec, baseline_source(spec))
    assert verdict.status == "ok", verdict.message
    assert verdict.info.get("driver") and verdict.info.get("cuda_driver_api"), verdict.info
    for phase in ("correctness", "timing", "judge_load", "judge_compare"):
        assert phase in verdict.breakdown_s, verdict.breakdown_s
