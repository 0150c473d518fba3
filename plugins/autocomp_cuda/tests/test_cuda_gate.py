"""The problem-quality gate over the whole suite, and the negative controls it must refuse."""

from __future__ import annotations

import asyncio

import pytest

from autocomp_cuda.problemset import suite

#: At full size a GPU evaluation holds every trial's inputs twice (correctness and timing
#: sets), the float64 reference in its own worker, and the flush buffer: the problems are
#: sized so that 16x their inputs, output and weights fit in a 24 GB GPU.
GPU_BYTES, HELD_COPIES = 24e9, 16


@pytest.mark.asyncio
async def test_gate_passes_suite_and_refuses_controls(make_backend):
    backend = make_backend("cpu")
    specs = suite(include_controls=True)
    assert len([s for s in specs if s.control is None]) >= 20
    assert {s.level for s in specs} == {"L1", "L2", "L3", "ctrl"}
    reports = await asyncio.gather(*(backend.check_problem(s.id) for s in specs))
    by_id = {r.problem: r for r in reports}
    failed = {
        r.problem: r.reasons for r in reports if not r.passed and not r.problem.startswith("ctrl/")
    }
    assert not failed, failed
    sizes = {r.problem: r.details["memory_bytes_full"] for r in reports}
    assert all(sizes.values()), sizes  # known for every problem
    too_big = {p: b for p, b in sizes.items() if b * HELD_COPIES > GPU_BYTES}
    assert not too_big, too_big
    zero = by_id["ctrl/degenerate_zero"]
    assert not zero.passed and any("zeros" in reason for reason in zero.reasons), zero.reasons
    stochastic = by_id["ctrl/stochastic_dropout"]
    assert not stochastic.passed and any("deterministic" in reason for reason in stochastic.reasons)
    # L3/33's pattern: every output is right, but forward replaces a plain tensor attribute.
    stateful = by_id["ctrl/stateful_hidden"]
    assert stateful.category == "stateful" and "self.hidden" in stateful.reasons[0], (
        stateful.reasons
    )


def test_integer_dtypes_are_preserved(make_backend):
    backend = make_backend("cpu")
    report = asyncio.run(backend.check_problem("L1/argmax_dim1"))
    assert report.details["output"]["dtype"] == "int64"


ROUNDING_NOISE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        centred = x - x.mean(dim=1, keepdim=True)
        return centred.mean(dim=1)  # zero, up to rounding


def get_inputs():
    return [torch.randn(64, 1000) * 3.0 + 5.0]


def get_init_inputs():
    return []
"""


def test_an_output_that_is_rounding_noise_is_degenerate(make_backend, tmp_path):
    path = tmp_path / "centred_mean.py"
    path.write_text(ROUNDING_NOISE)
    report = asyncio.run(make_backend("cpu").check_problem(str(path)))
    assert not report.passed and report.category == "degenerate", report.reasons
    assert "rounding noise" in report.reasons[0], report.reasons


SELU_ON_NON_NEGATIVE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.selu(x)  # scale * x for every x >= 0: a line on these inputs


# The gate's probes alone, on the file's own inputs (trials off the distribution would refuse
# the line in correctness instead; see the last assertion of the test below).
AUTOCOMP = {"off_distribution": False}


def get_inputs():
    return [torch.rand(64, 300) * 4.0]


def get_init_inputs():
    return []
"""

# The identity on [-1, 1] (mirrored inputs stay on it too): stretched ones leave it.
HARDTANH_ON_UNIT = SELU_ON_NON_NEGATIVE.replace(
    "torch.selu(x)", "torch.nn.functional.hardtanh(x)"
).replace("torch.rand(64, 300) * 4.0", "torch.rand(64, 300)")

# A line on every input, not only on these: computing it is the problem, not a trick.
TIMES_A_SCALAR = SELU_ON_NON_NEGATIVE.replace("torch.selu(x)", "x * 3.5")

# Makes a tensor inside forward: in the float64 run it must be float64 too.
MAKES_ITS_OWN_TENSOR = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x @ torch.linspace(-1.0, 1.0, x.shape[1] * 8).reshape(x.shape[1], 8))


def get_inputs():
    return [torch.randn(32, 16)]


def get_init_inputs():
    return []
"""


def test_an_operator_that_is_a_line_on_its_inputs_is_degenerate_and_float64_covers_tensors_made_in_forward(
    make_backend, tmp_path
):
    backend = make_backend("cpu")
    (tmp_path / "selu.py").write_text(SELU_ON_NON_NEGATIVE)
    (tmp_path / "own_tensor.py").write_text(MAKES_ITS_OWN_TENSOR)
    (tmp_path / "scalar.py").write_text(TIMES_A_SCALAR)
    (tmp_path / "hardtanh.py").write_text(HARDTANH_ON_UNIT)
    (tmp_path / "selu_off.py").write_text(
        SELU_ON_NON_NEGATIVE.replace('AUTOCOMP = {"off_distribution": False}', "")
    )

    async def checks():
        return await asyncio.gather(
            *(
                backend.check_problem(str(tmp_path / name))
                for name in ("selu.py", "own_tensor.py", "scalar.py", "hardtanh.py", "selu_off.py")
            )
        )

    selu, own, scalar, hardtanh, selu_off = asyncio.run(checks())
    assert (
        not selu.passed and selu.category == "degenerate" and "affine_input0" in selu.reasons[0]
    ), selu.reasons
    assert not hardtanh.passed and "identity_input0" in hardtanh.reasons[0], hardtanh.reasons
    assert scalar.passed, scalar.reasons
    assert own.passed, own.reasons
    assert own.details["reference_error_ratio"] > 0  # a float64 run, not the float32 one again
    # An imported file is also tried on signed inputs, where SELU is not a line: judgeable.
    assert selu_off.passed, selu_off.reasons


# State no attribute snapshot sees (a list): the output depends on how often forward ran.
COUNTS_ITS_CALLS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = []

    def forward(self, x):
        self.calls.append(1)
        return torch.tanh(x) * len(self.calls)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
"""


def test_a_model_whose_second_call_differs_is_stateful_not_nondeterministic(make_backend, tmp_path):
    path = tmp_path / "counts_its_calls.py"
    path.write_text(COUNTS_ITS_CALLS)
    report = asyncio.run(make_backend("cpu").check_problem(str(path)))
    assert report.category == "stateful", report.reasons
    assert "second call on the same inputs differs" in report.reasons[0], report.reasons
