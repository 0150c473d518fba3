"""Problem families on the cuda backend: every problem says its family, shapes and dtypes;
the matmul siblings are near each other; every held-out shape keeps the rules
``problems/held_out.toml`` states; the baseline and the shipped honest kernels are right
there; a program hard-coded to the searched shape is refused there; and a run whose only
faster program is hard-coded labels it overfit and reports the baseline."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from autocomp_core.api import optimize_async
from autocomp_core.contract.backend import EvalContext, FailureKind
from autocomp_core.ledger.playbook import Entry, features
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing import LLMTestServer

from autocomp_cuda import family
from autocomp_cuda.adversarial import HONEST, KERNELBENCH, header, settings_of
from autocomp_cuda.backend import CudaBackend
from autocomp_cuda.problemset import baseline_source, suite

SEARCHED = [s for s in suite() if s.control is None]
HONEST_KB_FILE = KERNELBENCH / "level1" / "1_Square_matmul.py"
TIERS = ("tiny", "full")


def backend_at(size: str) -> CudaBackend:
    """For problems and metadata only: nothing here is evaluated."""
    return CudaBackend(hardware={"device": "cpu"}, options={"size": size, "include_controls": True})


def pow2_kept(n: int) -> int:
    """The power of two a held-out size keeps dividing it (the rule of held_out.toml)."""
    return max(1, min(n & -n, 128, n // 2))


# ---------------------------------------------------------------------------- metadata
@pytest.mark.parametrize("size", TIERS)
def test_every_problem_says_its_family_shapes_and_dtypes(size):
    backend = backend_at(size)
    seen = {}
    for problem in backend.problems():
        name, shapes, dtypes = features(problem.id, problem.metadata)
        assert name == problem.metadata["family"] and "/" not in name, problem.id
        assert shapes and all(isinstance(s, int) and s > 0 for s in shapes), problem.id
        assert "float32" in dtypes, problem.id
        seen[problem.id] = (name, shapes, dtypes)
    square = {"tiny": [48], "full": [2048]}[size]
    irregular = {"tiny": [37, 29, 41], "full": [3079, 1531, 2213]}[size]
    assert seen["L1/matmul_square"] == ("matmul", square, ["float32"])
    assert seen["L1/matmul_irregular"] == ("matmul", irregular, ["float32"])
    assert seen["L1/relu"][0] == "relu"
    assert seen["L1/cross_entropy"][2] == ["float32", "int64"]  # its targets


def test_an_imported_problem_is_named_after_its_file():
    spec = CudaBackend(hardware={"device": "cpu"}).spec(str(HONEST_KB_FILE))
    assert family.family_name(spec) == "square_matmul"


def test_matmul_siblings_are_nearer_than_another_family():
    backend = backend_at("tiny")
    square = features("L1/matmul_square", backend.load_problem("L1/matmul_square").metadata)
    entry = Entry("cuda", square[0], "L1/matmul_square", square[1], square[2], "r", 2.0, [], [])
    irregular = features(
        "L1/matmul_irregular", backend.load_problem("L1/matmul_irregular").metadata
    )
    for other_id in ("L1/relu", "L1/matvec", "L2/linear_scale_leakyrelu"):
        other = features(other_id, backend.load_problem(other_id).metadata)
        assert entry.distance(irregular[0], irregular[1]) < entry.distance(other[0], other[1])
    assert entry.distance(irregular[0], irregular[1]) < 1.0  # one family, shapes near


# ---------------------------------------------------------------------------- held-out rules
@pytest.mark.parametrize("size", TIERS)
@pytest.mark.parametrize("spec", SEARCHED, ids=lambda s: s.id)
def test_the_held_out_shape_keeps_the_stated_rules(spec, size):
    held = family.held_out_spec(spec, size)
    assert held is not None and held.id == spec.id + "@held-out"
    sizes = {k: v for k, v in spec.constants.items() if type(v) is int}
    assert set(spec.held_out[size]) <= set(sizes), "only the file's integer size constants"
    searched = {**sizes, **spec.sizes(size)}
    at = {**sizes, **held.sizes(size)}
    assert at != searched
    for shape in spec.family(size):
        assert at != {**searched, **shape}, "a shape the search checks already"
    for name, value in at.items():
        if value != searched[name]:
            kept = pow2_kept(searched[name])
            assert value > 0 and value % kept == 0, f"{name}={value} drops {kept} | {name}"
    assert held.flop_count(size) <= spec.flop_count(size)
    assert held.shapes == [], "the held-out evaluation checks its own shape only"


def test_controls_and_user_sized_imports_have_no_held_out_shape():
    controls = [s for s in suite(include_controls=True) if s.control is not None]
    assert controls and all(family.held_out_spec(s, "tiny") is None for s in controls)
    spec = CudaBackend(hardware={"device": "cpu"}).spec(str(HONEST_KB_FILE))
    assert family.held_out_spec(spec, "tiny").shrink == 0.25  # type: ignore[union-attr]
    assert family.held_out_spec(spec, "full").shrink == 1.0  # type: ignore[union-attr]
    spec.tiny = {"N": 64}  # size_overrides: the user's sizes
    assert family.held_out_spec(spec, "tiny") is None


def test_the_prompt_states_the_rule_without_the_held_out_sizes():
    backend = backend_at("tiny")
    problem = backend.load_problem("L1/matmul_square")
    assert "other sizes of this problem's family" in problem.context
    assert "N=48" in problem.context and "N=32" not in problem.context
    held = backend.held_out_problem(problem)
    assert held is not None and "N=32" in held.context
    shown = problem.baseline_code + problem.metadata["reference_code"]
    assert "held_out" not in shown and "1536" not in shown
    assert "other sizes" not in backend.load_problem("ctrl/degenerate_zero").context


def _run_at(path: Path, name: str, overrides: dict, seed: int, torch, common):
    module = common.load_module(path, name, overrides)
    torch.manual_seed(seed)
    model = getattr(module, "ModelNew", None) or module.Model
    model = model(*module.get_init_inputs())
    torch.manual_seed(seed + 1)
    inputs = module.get_inputs()
    with torch.no_grad():
        return [tuple(t.shape) for t in inputs if hasattr(t, "shape")], model(*inputs)


@pytest.mark.parametrize("spec", SEARCHED, ids=lambda s: s.id)
def test_the_baseline_is_right_at_the_tiny_held_out_shape(spec, tmp_path):
    """At the model level, in this process: the Model runs at the held-out sizes (the shape
    keeps its constraints) and the baseline computes what it computes there."""
    torch = pytest.importorskip("torch")
    from autocomp_cuda.runtime import common

    held = family.held_out_spec(spec, "tiny")
    baseline = tmp_path / "baseline.py"
    baseline.write_text(baseline_source(spec))
    shapes, expected = _run_at(spec.path, "ref_at_held_out", held.sizes("tiny"), 5, torch, common)
    searched, _ = _run_at(spec.path, "ref_at_searched", spec.sizes("tiny"), 5, torch, common)
    assert shapes != searched, "the held-out shape changes the inputs"
    _, got = _run_at(baseline, "baseline_at_held_out", held.sizes("tiny"), 5, torch, common)
    assert got.shape == expected.shape and torch.allclose(got, expected, equal_nan=True)


@pytest.mark.parametrize("size", TIERS)
@pytest.mark.parametrize("spec", SEARCHED, ids=lambda s: s.id)
def test_the_held_out_shape_runs_and_keeps_the_structure(spec, size):
    """On tensors without data (the full tier is a GPU's): the forward runs, and every
    grouping and head width stays as searched (``shrink.structure``)."""
    pytest.importorskip("torch")
    from autocomp_cuda.runtime import shrink

    held = family.held_out_spec(spec, size)
    budget = shrink.Budget.unlimited(max_ops=2_000)
    at = shrink.measure(spec.path, held.sizes(size), budget)
    assert at.structure == shrink.measure(spec.path, spec.sizes(size), budget).structure


# ---------------------------------------------------------------------------- real evaluations
HARD_CODED = {
    # the searched size written in (as a literal: a module constant named as the problem's,
    # N, is set to each shape's size by the harness): right there, a crash anywhere else
    "L1/matmul_square": (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, a, b):\n        return torch.mm(a.view(48, 48), b.view(48, 48))\n"
    ),
    # the searched M and N written into the output: right there, the wrong shape elsewhere
    "L1/matmul_irregular": (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        out = torch.zeros(37, 41, dtype=a.dtype)\n"
        "        out[: a.shape[0], : b.shape[1]] = a @ b\n"
        "        return out\n"
    ),
}


async def _evaluate(backend, problem, code: str, seed: int = 0):
    return await backend.evaluate(problem, code, EvalContext(seed=seed))


@pytest.mark.asyncio
@pytest.mark.parametrize("problem_id", sorted(HARD_CODED))
async def test_a_hard_coded_program_is_right_searched_and_refused_held_out(
    make_backend, problem_id
):
    backend = make_backend(reps=4)
    problem = backend.load_problem(problem_id)
    held = backend.held_out_problem(problem)
    assert held is not None
    baseline = await _evaluate(backend, held, problem.baseline_code, seed=7)
    assert baseline.correct, baseline.feedback
    searched = await _evaluate(backend, problem, HARD_CODED[problem_id])
    assert searched.correct, searched.feedback
    result = await _evaluate(backend, held, HARD_CODED[problem_id], seed=7)
    assert not result.correct
    assert result.failure in (FailureKind.WRONG_ANSWER, FailureKind.CRASH), result.feedback


CPU_HONEST = [p for p in HONEST if header(p).get("gpu") != "true"]


@pytest.mark.slow  # (its C++ fixtures build for minutes on a cache made afresh)
@pytest.mark.asyncio
@pytest.mark.parametrize("path", CPU_HONEST, ids=lambda p: p.stem)
async def test_a_shipped_honest_kernel_is_right_at_the_held_out_shape(make_backend, path):
    """Suite problems at their declared shape; imported ones shrunk to a quarter budget (or,
    where that cannot be met, as searched: kb_conv_image_by_image's batch is at its floor)."""
    backend = make_backend(reps=4, **settings_of(path))
    held = backend.held_out_problem(backend.load_problem(header(path)["problem"]))
    assert held is not None
    result = await _evaluate(backend, held, path.read_text(), seed=11)
    assert result.correct, f"{path.name} refused held out: {result.feedback}"


# ---------------------------------------------------------------------------- the engine
#: A problem file whose baseline does eight times the work: any program computing it once is
#: faster, whatever the machine's load. As a user file (no tiny sizes) the CPU tier shrinks it
#: to 1024 x 512 for the search and to 512 x 256 for the held-out check.
SLOW_GELU = '''"""GELU of a matrix, computed eight times over."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 2048
COLS = 1024


class Model(nn.Module):
    def forward(self, x):
        out = F.gelu(x)
        for _ in range(7):
            out = torch.maximum(out, F.gelu(x))
        return out


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
'''

#: Once, at the searched sizes written in.
GELU_HARD_CODED = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return F.gelu(x.reshape(1024, 512))\n"
)


@pytest.mark.asyncio
async def test_a_run_whose_only_faster_program_is_hard_coded_labels_it_overfit(
    tmp_path, cuda_cache
):
    problem = tmp_path / "slow_gelu.py"
    problem.write_text(SLOW_GELU)
    model = "openai-compatible@{}::scripted"
    async with LLMTestServer(lambda r: f"```python\n{GELU_HARD_CODED}```") as server:
        summary = await optimize_async(
            {
                "backend": "cuda",
                "problem": str(problem),
                "seed": 3,
                "run_dir": str(tmp_path / "run"),
                "models": {"plan": [model.format(server.openai_base_url)]},
                "search": {
                    "iterations": 1,
                    "beam_size": 1,
                    "plans_per_candidate": 1,
                    "codes_per_plan": 1,
                    "direct": True,
                },
                "llm": {"max_retries": 1, "timeout_s": 30},
                "playbook": {"enabled": False},
                "backend_options": {"cache_dir": str(cuda_cache), "reps": 5},
            }
        )
    store = RunStore(tmp_path / "run")
    try:
        caught = store.candidate("i1-b0-d0")
        assert caught is not None and caught.correct, caught and caught.feedback
        assert caught.score < 0.5 * summary.data["initial_score"]  # it looked faster
        assert sorted(store.overfit()) == ["i1-b0-d0"]
        verdict = store.held_out_verdicts()["i1-b0-d0"]
        assert verdict["passed"] is False and verdict["reason"].startswith("crash")
    finally:
        store.close()
    assert summary.data["best_candidate"] == "root" and summary.data["speedup"] == 1.0
    assert summary.data["held_out"]["overfit"] == ["i1-b0-d0"]
    assert math.isfinite(summary.data["initial_score"])
