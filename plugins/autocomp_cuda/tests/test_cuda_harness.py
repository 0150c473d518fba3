"""Distinct statuses, compiler feedback located in the candidate, comparison and static rules."""

from __future__ import annotations

import hashlib
import math

import pytest
import torch
from autocomp_core.contract.backend import EvalContext, FailureKind

from autocomp_cuda import static_check
from autocomp_cuda.harness import Verdict, checksums_match
from autocomp_cuda.runtime.compare import check_output, error_ratio
from autocomp_cuda.suite import fast_p

RELU_HEAD = "import torch\nimport torch.nn as nn\n\n"


async def _eval(backend, problem_id, code):
    problem = backend.load_problem(problem_id)
    return await backend.evaluate(problem, code, EvalContext())


def _status(result):
    return result.feedback.splitlines()[0].removeprefix("status: ")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body, status, failure",
    [
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
            "ok",
            None,
        ),
        ("class Other(nn.Module):\n    pass\n", "load_error", FailureKind.CRASH),
        ("import not_a_module_anywhere\n", "load_error", FailureKind.CRASH),
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        raise ValueError('boom')\n",
            "runtime_error",
            FailureKind.CRASH,
        ),
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.empty(2**42)\n",
            "oom",
            FailureKind.CRASH,
        ),
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x) * 1.01\n",
            "mismatch",
            FailureKind.WRONG_ANSWER,
        ),
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x).double()\n",
            "mismatch",
            FailureKind.WRONG_ANSWER,
        ),
        (
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        while True:\n            pass\n",
            "timeout",
            FailureKind.TIMEOUT,
        ),
        ("class ModelNew(nn.Module)\n    pass\n", "compile_error", FailureKind.COMPILE_ERROR),
    ],
)
async def test_statuses(make_backend, body, status, failure):
    # The endless loop spins until the deadline: a short one, so it takes a core for 3 s only.
    backend = make_backend("cpu", correctness_timeout_s=3 if status == "timeout" else 8)
    result = await _eval(backend, "L1/relu", RELU_HEAD + body)
    assert _status(result) == status, result.feedback
    assert result.failure == failure
    if status == "compile_error":
        assert "candidate line 4" in result.feedback


@pytest.mark.asyncio
async def test_cpp_compile_error_points_at_candidate_line(make_backend):
    # Plain C++ without torch's implicit header and bindings: the compiler reaches the error
    # at once instead of after a minute parsing torch/extension.h (the honest kernels' builds
    # cover that header); the error and its log go through the same path.
    code = RELU_HEAD + (
        "from torch.utils.cpp_extension import load_inline\n"
        "SRC = '''\n"
        "float f(float x) {\n"
        "    return x + undefined_symbol;\n"
        "}\n"
        "'''\n"
        "ext = load_inline('autocomp_test_broken', cpp_sources=SRC, no_implicit_headers=True)\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"
    )
    result = await _eval(make_backend("cpu"), "L1/relu", code)
    assert _status(result) == "compile_error", result.feedback
    assert "candidate line 7" in result.feedback and "undefined_symbol" in result.feedback


def test_relative_tolerance_refuses_zeros_for_tiny_outputs():
    draw = torch.Generator().manual_seed(0)  # unseeded, one draw in a few had an entry >= 1e-3
    ref = torch.softmax(torch.randn(4, 100_000, dtype=torch.float64, generator=draw), dim=1)
    assert ref.abs().max() < 1e-3
    assert error_ratio(torch.zeros_like(ref), ref, 1e-4, 1e-4) > 1
    assert error_ratio(ref.float(), ref, 1e-4, 1e-4) <= 1


def test_check_output_exact_type_shape_dtype():
    ref = torch.randn(3, 4)
    assert check_output(ref.clone(), ref.double(), ref.dtype, 1e-4, 1e-4).ok
    assert not check_output(ref.double(), ref.double(), ref.dtype, 1e-4, 1e-4).ok
    assert not check_output(ref[:2], ref.double(), ref.dtype, 1e-4, 1e-4).ok

    class Sub(torch.Tensor):
        pass

    assert not check_output(ref.as_subclass(Sub), ref.double(), ref.dtype, 1e-4, 1e-4).ok
    ints = torch.tensor([1, 2, 3])
    assert math.isinf(error_ratio(torch.tensor([1, 2, 4]), ints, 1e-4, 1e-4))


def test_check_output_asserts_strides_before_values():
    ref = torch.randn(3, 4)
    want = list(ref.stride())
    assert check_output(ref.clone(), ref.double(), ref.dtype, 1e-4, 1e-4, None, want).ok
    transposed = ref.t().contiguous().t()  # right values, column-major
    verdict = check_output(transposed, ref.double(), ref.dtype, 1e-4, 1e-4, None, want)
    assert not verdict.ok and "strides" in verdict.reason
    row = torch.randn(1, 4)
    broadcast = row.expand(3, 4)  # stride 0: one row written, three claimed
    # the worker records the strides forward returned; its snapshot (a clone) is dense again
    assert broadcast.clone().stride() == (4, 1)
    assert not check_output(
        broadcast.clone(), broadcast.double(), ref.dtype, 1e-4, 1e-4, list(broadcast.stride()), want
    ).ok
    # a dimension of size 1 is never stepped over: its stride does not matter
    assert check_output(
        row.t().contiguous().t(), row.double(), row.dtype, 1e-4, 1e-4, [1, 1], list(row.stride())
    ).ok


def test_static_rules_allow_honest_constructs_and_catch_evasions():
    honest = (
        "import torch\ntry:\n    x = 1\nexcept RuntimeError as e:\n    raise e\n"
        "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        pass\n"
    )
    assert static_check.check(honest) == []
    for bad in (
        "import threading",
        "T = torch\nT.allclose = None",
        "from torch.nn import functional as G\nG.relu = None",  # a from-import is an alias too
        "from torch import testing as tt\nT = tt\nT.assert_close = None",
        "setattr(torch, 'equal', None)",
        "import sys\nsys._getframe(0)",
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "class L(torch.Tensor):\n    pass",
        "class M(Model):\n    pass",
        "exec('1')",
    ):
        assert static_check.check("import torch\n" + bad), bad


def test_fast_p_counts_flagged_only_in_compatible_mode():
    verdicts = {
        "a": Verdict("ok", candidate_ms=1.0, baseline_ms=2.0),
        "b": Verdict("mismatch"),
        "c": Verdict("ok", candidate_ms=1.0, baseline_ms=3.0, flags=["no_custom_kernel"]),
        "d": None,
    }
    assert fast_p(verdicts, 1.0) == 0.25
    assert fast_p(verdicts, 1.0, strict=False) == 0.5
    assert fast_p(verdicts, 0.0) == 0.25


#: Overwrites every file of the compiled baseline's cache it is given: the candidate's worker
#: is given none (the baselines are timed by a worker of their own), so it fails to load.
POISONS_THE_COMPILED_BASELINE = RELU_HEAD + (
    "import os\n\n"
    "_cache = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
    "_files = [os.path.join(d, n) for d, _, names in os.walk(_cache) for n in names]\n"
    "assert _files, 'no compiled-baseline cache to poison'\n"
    "for _path in _files:  # replaced, not truncated: this process keeps what it mapped\n"
    "    with open(_path + '.new', 'wb') as _f:\n"
    "        _f.write(b'poisoned')\n"
    "    os.replace(_path + '.new', _path)\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
)


def _digests(folder):
    return {
        path: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.asyncio
async def test_torch_compile_baseline_is_timed_alongside_when_asked(make_backend):
    backend = make_backend("cpu", compile_baseline=True, reps=4)
    problem = backend.load_problem("L1/relu")
    result = await _eval(backend, "L1/relu", problem.baseline_code)
    assert result.correct, result.feedback
    assert result.extra["compiled_baseline_ms"] > 0 and result.extra["speedup_vs_compiled"] > 0
    assert "torch.compile baseline" in result.feedback
    # Compiled once, by a worker that holds no candidate; each evaluation's baseline worker
    # gets a copy, and loads it without compiling anything itself.
    kept = _digests(backend.harness.cache / "inductor")
    assert kept
    again = await backend.harness.evaluate(backend.spec("L1/relu"), problem.baseline_code)
    assert again.status == "ok" and again.info["compiled_baseline_binaries_built"] == 0
    poisoner = make_backend("cpu", compile_baseline=True, reps=4, static_checks=False)
    poisoned = await _eval(poisoner, "L1/relu", POISONS_THE_COMPILED_BASELINE)
    assert not poisoned.correct and "TORCHINDUCTOR_CACHE_DIR" in poisoned.feedback
    after = _digests(backend.harness.cache / "inductor")
    assert {path: after.get(path) for path in kept} == kept
    plain = await _eval(make_backend("cpu", reps=4), "L1/relu", problem.baseline_code)
    assert "compiled_baseline_ms" not in plain.extra


def test_fast_p_against_the_compiled_baseline():
    ok = Verdict("ok", candidate_ms=1.0, baseline_ms=2.0, compiled_baseline_ms=0.8)
    verdicts = {"a": ok, "b": None}
    assert fast_p(verdicts, 1.0) == 0.5
    assert fast_p(verdicts, 1.0, against="compiled") == 0.0
    assert fast_p(verdicts, 0.5, against="compiled") == 0.5


@pytest.mark.asyncio
async def test_tracebacks_show_the_candidates_frames_not_the_harness(make_backend):
    code = RELU_HEAD + (
        "def helper(x):\n    raise ValueError('boom')\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return helper(x)\n"
    )
    result = await _eval(make_backend("cpu"), "L1/relu", code)
    assert _status(result) == "runtime_error"
    assert 'File "candidate.py", line 9, in forward' in result.feedback
    assert (
        'File "candidate.py", line 5, in helper' in result.feedback
        and "ValueError: boom" in result.feedback
    )
    assert (
        "candidate_main.py" not in result.feedback and "harness or library frame" in result.feedback
    )


def test_input_checksums_from_two_processes_agree_up_to_summation_order():
    # Seen: a gate run with --jobs 2 (one thread) and an evaluation (two threads) summed the
    # same input's squares to 131366.3208035507 and 131366.32080355068.
    ref = [[[196841.10869449377, 131366.32080355068, 974537078.182555]], [None]]
    assert checksums_match(
        [[[196841.10869449377, 131366.3208035507, 974537078.182555]], [None]], ref
    )
    assert not checksums_match(
        [[[196841.10869449377, 131402.7, 974537078.182555]], [None]], ref
    )  # drawn anew
    assert not checksums_match(
        [[[196841.10869449377, 131366.32080355068, 974537078.182555]]], ref
    )  # a trial short
    assert not checksums_match(None, ref)


def _publish_one(args: tuple[str, str, int]) -> str:
    from pathlib import Path

    from autocomp_cuda.cache import publish

    root, target, n = args
    made = Path(root) / f"made-{n}"
    made.mkdir()
    (made / "meta.json").write_text("{}")
    (made / "init.pt").write_bytes(b"x" * 4096)
    publish(made, Path(target))
    return sorted(p.name for p in Path(target).iterdir()) == ["init.pt", "meta.json"]


def test_processes_sharing_the_cache_publish_one_complete_directory(tmp_path):
    """Parallel runs and the test suite's workers share one cache: each publishes its own
    copy of a reference or a build under a name of its own, the first wins, none fails
    ('Directory not empty') and none deletes another's half-moved copy."""
    from concurrent.futures import ProcessPoolExecutor

    (tmp_path / "refs").mkdir()
    target = tmp_path / "refs" / "key"
    with ProcessPoolExecutor(4) as pool:
        assert all(pool.map(_publish_one, [(str(tmp_path), str(target), n) for n in range(16)]))
    assert sorted(p.name for p in target.iterdir()) == ["init.pt", "meta.json"]
    assert [p.name for p in (tmp_path / "refs").iterdir()] == ["key"]  # no copy left behind
