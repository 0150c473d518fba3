"""Imported problems run anywhere: on the CPU device a problem that brings no tiny sizes is
shrunk to a budget, keeping the relations its code needs; one that cannot shrink says so."""

from __future__ import annotations

import pytest
from autocomp_core.contract.backend import EvalContext

from autocomp_cuda.runtime import common, shrink

# 16 M-element input and a 32 M-element weight at its own sizes: too big for the CPU budget.
WIDE_LINEAR = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.shift = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.tanh(self.linear(x) + self.shift) * 2.0


batch_size = 4096
in_features = 4096
out_features = 8192
bias_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
"""

# A 128 M-element weight that no module constant sizes.
FIXED_WEIGHT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8192, 16384))

    def forward(self, x):
        return x @ self.w


batch_size = 64


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return []
"""

# The width must stay divisible by 16 heads; the sequence and batch may shrink.
ATTENTION = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


batch_size = 64
seq_len = 4096
embed_dim = 48
num_heads = 16


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
"""


# The forward needs real values (a boolean mask): shape-only tensors cannot run it.
MASKED_SUM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x[x > 0].sum().reshape(1)


size = 2**26


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
"""


@pytest.fixture
def checkout(tmp_path):
    level1 = tmp_path / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    (level1 / "1_Wide_linear.py").write_text(WIDE_LINEAR)
    (level1 / "2_Fixed_weight.py").write_text(FIXED_WEIGHT)
    return tmp_path


def test_knobs_are_size_constants_and_overrides_reach_what_is_computed_from_them(tmp_path):
    source = (
        "import torch\nbatch_size = 2\nD, H, W = 16, 32, 3\nkernel_size = 64\nnum_layers = 32\n"
        "input_shape = (32768,)\nlayer_sizes = [1024, 4]\nout_channels = 8 * 16\n"
        "bias_shape = (out_channels, 1, 1)\n"
    )
    found = {k.label: k.value for k in shrink.knobs(source)}
    assert found == {
        "batch_size": 2,
        "D": 16,
        "H": 32,
        "input_shape[0]": 32768,
        "layer_sizes[0]": 1024,
        "out_channels": 128,
    }
    overrides = shrink.overrides_for(
        source, {"H": 8, "input_shape[0]": 64, "layer_sizes[0]": 16, "out_channels": 32}
    )
    assert overrides == {"H": 8, "input_shape": (64,), "layer_sizes": [16, 4], "out_channels": 32}
    path = tmp_path / "p.py"
    path.write_text(source)
    module = common.load_module(path, "sized", overrides)
    assert (module.D, module.H, module.W, module.bias_shape, module.layer_sizes) == (
        16,
        8,
        3,
        (32, 1, 1),
        [16, 4],
    )


def test_shrinking_keeps_the_relations_the_code_needs(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(ATTENTION)
    found = shrink.shrink(path)
    assert found.error is None and found.measure.fits(shrink.Budget())
    assert "embed_dim" not in found.sizes  # 24 is not divisible by 16 heads: left as written
    assert (
        found.sizes["seq_len"] < 4096
        and found.full.data[1] > shrink.Budget().max_elements >= found.measure.data[1]
    )


@pytest.mark.asyncio
async def test_an_imported_problem_too_big_for_the_cpu_is_shrunk_gated_and_evaluated(
    make_backend, checkout
):
    backend = make_backend("cpu", kernelbench_path=str(checkout))
    report = await backend.check_problem("kb/L1/1")
    assert report.passed, report.reasons
    sizes = report.details["sizes"]
    assert (
        report.details["sizes_auto"]
        and sizes
        and all(sizes[k] < v for k, v in {"batch_size": 4096, "in_features": 4096}.items())
    )
    problem = backend.load_problem("kb/L1/1")
    assert "halved where needed" in problem.context
    result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
    assert result.correct, result.feedback
    assert "sizes shrunk automatically to fit the CPU: batch_size=" in result.feedback
    # Explicit overrides win over shrinking.
    chosen = make_backend(
        "cpu",
        kernelbench_path=str(checkout),
        size_overrides={"kb/L1/1": {"batch_size": 8, "in_features": 32, "out_features": 64}},
    )
    report = await chosen.check_problem("kb/L1/1")
    assert report.passed and not report.details["sizes_auto"]
    assert report.details["sizes"] == {"batch_size": 8, "in_features": 32, "out_features": 64}


@pytest.mark.asyncio
async def test_a_problem_that_cannot_shrink_is_refused_in_one_line(make_backend, checkout):
    backend = make_backend("cpu", kernelbench_path=str(checkout))
    report = await backend.check_problem("kb/L1/2")
    assert not report.passed and report.category == "cannot_shrink"
    assert len(report.reasons) == 1 and "\n" not in report.reasons[0]
    assert "weight w (8192, 16384)" in report.reasons[0] and "batch_size=1" in report.reasons[0], (
        report.reasons
    )
    result = await backend.evaluate(backend.load_problem("kb/L1/2"), FIXED_WEIGHT, EvalContext())
    assert result.feedback.startswith(
        "status: infra_error\nthe problem cannot run here: cannot shrink"
    ), result.feedback


def test_a_forward_that_needs_values_runs_for_real_only_once_it_is_small(tmp_path):
    path = tmp_path / "masked.py"
    path.write_text(MASKED_SUM)
    # The GPU's memory check at the file's own sizes: nothing runs for real (256 MB of input).
    full = shrink.measure(path, {}, shrink.Budget.unlimited(max_ops=2_000))
    assert full.data[1] == 2**26 and full.flops is None
    found = shrink.shrink(path)
    assert (
        found.error is None and found.sizes == {"size": 2**20} and found.measure.flops is not None
    )


GROUP_NORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        return self.gn(x)


batch_size = 16
features = 32
num_groups = 8
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, num_groups]
"""


def test_shrinking_keeps_channels_per_group(tmp_path):
    # Halving 32 channels in 8 groups to 8 made the GroupNorm an InstanceNorm (one channel
    # per group), and a program computing that one passed (adversarial h48).
    path = tmp_path / "group_norm.py"
    path.write_text(GROUP_NORM)
    found = shrink.shrink(path)
    assert found.error is None and found.measure.fits(shrink.Budget())
    assert found.measure.structure == found.full.structure == {"gn: channels per group": 4}
    assert "features" not in found.sizes and found.sizes  # the other sizes shrank instead


def test_a_batch_stops_at_two_where_the_other_sizes_can_shrink_instead():
    # At batch 1, a program that computes the first image only is right (adversarial h47),
    # and a second shape at 2 must be checked too: a second reference and a second run.
    # Here the image shrinks instead, and one shape at batch 2 is all there is to check.
    from autocomp_cuda.adversarial import KERNELBENCH

    found = shrink.shrink(KERNELBENCH / "level1" / "55_Conv2d_asymmetric_input.py")
    assert found.error is None and found.measure.fits(shrink.Budget())
    assert found.sizes["batch_size"] == 2 and found.second is None
    assert found.sizes["height"] < 512 and found.sizes["width"] < 1024
    assert shrink.shrink(KERNELBENCH / "level1" / "40_LayerNorm.py").second is None


def test_a_batch_shrunk_to_one_comes_with_a_second_shape_at_two():
    # Only the batch is a size constant here, and one image nearly fills the budget: the
    # batch goes to 1, and the harness also checks the candidate at 2 (adversarial h47b).
    from autocomp_cuda.adversarial import KERNELBENCH

    found = shrink.shrink(KERNELBENCH / "level3" / "19_Fixed_image_stem.py")
    assert found.error is None and found.measure.fits(shrink.Budget())
    assert found.sizes == {"batch_size": 1} and found.second == {"batch_size": 2}
