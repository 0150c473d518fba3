"""Problems from outside the suite: a KernelBench-layout checkout and single reference files,
through the same gate, with tolerances that follow the output dtype unless a problem sets them."""

from __future__ import annotations

import pytest
from autocomp_core.contract.backend import EvalContext

from autocomp_cuda.problemset import tolerance_for

HALF_TANH = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.tanh(x * y)


def get_inputs():
    return [torch.randn(32, 64).half() * 2.0, torch.randn(32, 64).half()]


def get_init_inputs():
    return []
"""

SCALED_ROW_SUM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super(Model, self).__init__()  # as KernelBench writes it
        self.scale = scale

    def forward(self, x):
        return (x * self.scale).sum(dim=1)


def get_inputs():
    return [torch.randn(16, 300)]


def get_init_inputs():
    return [0.5]
"""

HALF_CANDIDATE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.tanh(x.float() * y.float()).half()  # float32 math, rounded once at the end
"""


@pytest.fixture
def checkout(tmp_path):
    level1, level2 = tmp_path / "KernelBench" / "level1", tmp_path / "KernelBench" / "level2"
    level1.mkdir(parents=True)
    level2.mkdir()
    (level1 / "1_Half_tanh.py").write_text(HALF_TANH)
    (level2 / "7_Scaled_row_sum.py").write_text(SCALED_ROW_SUM)
    (level2 / "notes.py").write_text("# not a problem file name\n")
    (level2 / "8_Broken.py").write_text("import torch\n")  # no Model: skipped, not fatal
    return tmp_path


def test_checkout_problems_are_listed_by_level_and_number(make_backend, checkout):
    ids = [p.id for p in make_backend("cpu", kernelbench_path=str(checkout)).problems()]
    assert [i for i in ids if i.startswith("kb/")] == ["kb/L1/1", "kb/L2/7"]
    only2 = make_backend("cpu", kernelbench_path=str(checkout), kernelbench_levels=[2]).problems()
    assert [p.id for p in only2 if p.id.startswith("kb/")] == ["kb/L2/7"]
    assert (
        "KernelBench level 2 problem 7: Scaled_row_sum"
        in make_backend("cpu", kernelbench_path=str(checkout)).load_problem("kb/L2/7").description
    )


@pytest.mark.asyncio
async def test_imported_problems_pass_the_gate_and_evaluate(make_backend, checkout):
    backend = make_backend("cpu", kernelbench_path=str(checkout))
    for ref in ("kb/L1/1", "kb/L2/7"):
        report = await backend.check_problem(ref)
        assert report.passed, report.reasons
    problem = backend.load_problem("kb/L1/1")
    result = await backend.evaluate(problem, HALF_CANDIDATE, EvalContext())
    assert result.correct, result.feedback  # within float16's tolerance, not float32's
    # The starting program is the reference renamed, references to Model included.
    problem = backend.load_problem("kb/L2/7")
    assert "super(ModelNew, self)" in problem.baseline_code
    result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
    assert result.correct, result.feedback


@pytest.mark.asyncio
async def test_a_single_reference_file_loads_by_path_and_a_too_tight_tolerance_is_refused(
    make_backend, tmp_path
):
    loose = tmp_path / "half_tanh.py"
    loose.write_text(HALF_TANH)
    tight = tmp_path / "half_tanh_tight.py"
    tight.write_text(HALF_TANH + 'AUTOCOMP = {"atol": 1e-5, "rtol": 1e-5}\n')
    backend = make_backend("cpu")
    assert backend.load_problem(str(loose)).id == f"file:{loose.resolve()}"
    assert (await backend.check_problem(f"file:{loose}")).passed
    report = await backend.check_problem(str(tight))
    assert not report.passed and "tolerance is too tight" in report.reasons[0]


def test_tolerances_follow_the_dtype_unless_the_problem_sets_them():
    assert tolerance_for("float32") == (1e-4, 1e-4)
    assert tolerance_for("float16") == (1e-2, 1e-2)
    assert tolerance_for("bfloat16") == (2e-2, 2e-2)
    assert tolerance_for("float16", 1e-3, None) == (1e-3, 1e-2)


def test_a_missing_checkout_is_a_one_line_problem_error(tmp_path):
    from autocomp_core.contract.plugins import load_problem, make_backend
    from autocomp_core.errors import ConfigError

    backend = make_backend(
        "cuda", {"device": "cpu"}, {"kernelbench_path": str(tmp_path / "nowhere")}
    )
    with pytest.raises(ConfigError, match="no KernelBench level folders"):
        load_problem(backend, "kb/L1/1")


TRAINING_BATCHNORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)  # training mode, as KernelBench leaves it

    def forward(self, x):
        return torch.relu(self.bn(x) * 2.0)


def get_inputs():
    return [torch.randn(32, 48)]


def get_init_inputs():
    return [48]
"""

# Caches what it saw in a buffer (the reference keeps none changing): still refused.
BUFFER_CACHE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x):
        self.seen += 1
        return (x * self.scale).sum(dim=1)
"""


@pytest.mark.asyncio
async def test_buffers_may_change_only_where_the_reference_changes_them(make_backend, tmp_path):
    """An imported problem declares nothing: the reference's own forward tells which buffers
    change (training-mode BatchNorm's running statistics), so its own program is accepted,
    while a candidate that changes a buffer the reference never changes is refused."""
    batchnorm, row_sum = tmp_path / "batchnorm.py", tmp_path / "row_sum.py"
    batchnorm.write_text(TRAINING_BATCHNORM)
    row_sum.write_text(SCALED_ROW_SUM)
    backend = make_backend("cpu")
    problem = backend.load_problem(str(batchnorm))
    result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
    assert result.correct, result.feedback
    result = await backend.evaluate(backend.load_problem(str(row_sum)), BUFFER_CACHE, EvalContext())
    assert not result.correct and "changed model state: buffer:seen" in result.feedback


LOG_OF_INPUT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log(x + 1e-3) * 0.5


def get_inputs():
    return [torch.rand(64, 128)]


def get_init_inputs():
    return []
"""

LAYER_NORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(128)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.rand(64, 128)]


def get_init_inputs():
    return []
"""


@pytest.mark.asyncio
async def test_imported_problems_are_tried_off_their_distribution_where_defined(
    make_backend, tmp_path
):
    backend = make_backend("cpu")
    (tmp_path / "log.py").write_text(LOG_OF_INPUT)
    (tmp_path / "ln.py").write_text(LAYER_NORM)
    log_spec, ln_spec = (
        backend.spec(str(tmp_path / "log.py")),
        backend.spec(str(tmp_path / "ln.py")),
    )
    # A log of the input: undefined on the signed, negative and wide maps, which fall back
    # to the problem's own inputs (recorded); defined on the all-positive one.
    _, meta = await backend.harness.reference(log_spec, 7)
    assert meta["input_variants"] == ["native", "native", "positive", "native", "native"]
    assert set(meta["input_fallbacks"]) == {"1", "3", "4"}
    assert "not finite" in meta["input_fallbacks"]["1"]
    assert meta["timed_variants"] == ["native", "positive"]
    # LayerNorm: every map defined; its weight 1 and bias 0 re-drawn.
    _, meta = await backend.harness.reference(ln_spec, 7)
    assert meta["input_variants"] == ["native", "signed", "positive", "negative", "wide"]
    assert meta["input_fallbacks"] == {} and meta["redrawn_weights"] == ["ln.weight", "ln.bias"]
    # The problem's own program is still right on all of them (weights copied by name).
    for spec in (log_spec, ln_spec):
        problem = backend.load_problem(spec.id)
        result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
        assert result.correct, result.feedback
