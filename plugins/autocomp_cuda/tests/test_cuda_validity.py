"""What a CUDA evaluation rests on: seeds drawn per program and recorded with the shapes and
checks (``EvalResult.verification``, shown by ``eval --json``), and one lower bound shared by
the harness's roofline refusal and the engine's ``impossible_result`` rule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from autocomp_core import IMPOSSIBLE_RESULT, SandboxResult, evaluation_seeds
from autocomp_core.contract.backend import EvalContext, FailureKind
from autocomp_core.executors.guarded import evaluate_guarded
from autocomp_core.sandbox import isolation_level

from autocomp_cuda.adversarial import ROOT as ADV
from autocomp_cuda.backend import CudaBackend
from autocomp_cuda.harness import judging, trial_seeds
from autocomp_cuda.harness.verdicts import Verdict

RELU = (ADV / "honest" / "triton_relu.py").read_text()


def test_eval_json_reports_the_seeds_shapes_and_checks_of_each_program(tmp_path, cuda_cache):
    path = tmp_path / "relu.py"
    path.write_text(RELU)
    runs = {}
    for name, code in {
        "first": RELU,
        "other": RELU + "\n# another program, other inputs\n",
    }.items():
        path.write_text(code)
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "autocomp_core.cli",
                "eval",
                "cuda",
                "L1/relu",
                str(path),
                "--json",
                "--seed",
                "5",
                "--hw",
                "device=cpu",
                "--option",
                "reps=3",
                "--option",
                f"cache_dir={json.dumps(str(cuda_cache))}",
            ],
            capture_output=True,
            text=True,
            env=os.environ,
        )
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        runs[name] = json.loads(out.stdout)
    v = runs["first"]["verification"]
    # fixed by (run seed, problem, program, the cache's own salt): no other cache holds
    # references for these inputs
    salt = (Path(cuda_cache) / "salt").read_text().strip()
    assert (Path(cuda_cache) / "salt").stat().st_mode & 0o077 == 0
    (seed,) = evaluation_seeds(5, f"L1/relu\0{salt}", RELU, 1)
    assert seed != evaluation_seeds(5, "L1/relu\0another cache", RELU, 1)[0]
    assert v["seeds"]["evaluation"] == seed and v["seeds"]["trials"] == trial_seeds(seed, 5)
    # every timed call's inputs: drawn from OS randomness, recorded once the evaluation is over
    timed = v["seeds"]["timed"]
    assert len(timed) == 3 and not set(timed) & set(trial_seeds(seed, 5 + 3))
    other = runs["other"]["verification"]["seeds"]
    assert other["trials"] != v["seeds"]["trials"]  # the inputs follow the program
    assert not set(other["timed"]) & set(timed)
    assert v["shapes"]["inputs"] == [[16, 96]] and v["shapes"]["output"]["stride"] == [96, 1]
    assert any("strides" in c for c in v["checks"]) and any(
        "timing: 3 calls" in c for c in v["checks"]
    )


@pytest.mark.asyncio
async def test_the_backend_declares_the_bound_its_harness_refuses_below(make_backend):
    """One rule: ``metric_lower_bound`` is the harness's roofline refusal bound (FLOPs and,
    once a reference ran, bytes moved), so the engine refuses the same numbers."""
    backend = make_backend("cpu", reps=3)
    backend.settings.peak_gflops, backend.settings.bandwidth_gbs = (
        1e-3,
        1e-6,
    )  # absurdly slow device
    problem = backend.load_problem("L1/relu")
    spec = backend.spec(problem.id)
    flops_only = backend.metric_lower_bound(problem)
    assert flops_only == pytest.approx(
        spec.flop_count("tiny") / 1e6 * 1e3 * backend.settings.roofline_slack
    )
    result = await backend.evaluate(problem, RELU, EvalContext())
    assert result.status == "hack_suspected" and "below the lower bound" in result.feedback
    moved = 2 * 16 * 96 * 4  # the input and the output, float32
    bound = backend.metric_lower_bound(problem)
    assert (
        bound == pytest.approx(moved / 1e-6 / 1e9 * 1e3 * backend.settings.roofline_slack)
        and bound > flops_only
    )
    assert f"{bound:.4g} ms" in result.feedback


@pytest.mark.asyncio
async def test_the_engine_refuses_a_cuda_result_below_the_bound(make_backend, monkeypatch):
    """Whatever fooled the harness (here: no device peaks, so it has no bound of its own), a
    time below the declared bound never reaches selection."""
    backend = make_backend("cpu", reps=3)
    problem = backend.load_problem("L1/relu")
    monkeypatch.setattr(CudaBackend, "metric_lower_bound", lambda self, p: 1e6)
    result = await evaluate_guarded(backend, problem, RELU, EvalContext())
    assert result.status == IMPOSSIBLE_RESULT and result.failure is FailureKind.REJECTED
    assert result.extra["lower_bound"] == 1e6 and result.verification["seeds"]


@pytest.mark.asyncio
async def test_no_candidate_reads_another_cache_of_the_user(make_backend, monkeypatch):
    """H27 against a cache other than its run's: $AUTOCOMP_CUDA_CACHE holds the references of
    an earlier evaluation of the same program, readable by anyone (as versions before refs/
    was made 0700 left them). A run on another cache dir must not show it to the candidate."""
    hack = (ADV / "hacks" / "h27_read_the_reference_cache.py").read_text()
    # beside the suite's kept caches: outside /tmp, whose fresh tmpfs would hide it anyway
    kept = Path(__file__).resolve().parents[3] / ".test-cache"
    kept.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="h27-", dir=kept))
    root.chmod(0o755)  # (mkdtemp's 0700 would keep a per-run uid out by itself)
    try:
        earlier, current = root / "earlier", root / "current"
        backend = make_backend("cpu", cache_dir=str(earlier), static_checks=False)
        first = await backend.evaluate(backend.load_problem("L1/relu"), hack, EvalContext())
        await backend.aclose()
        assert not first.correct, first.feedback
        (earlier / "refs").chmod(0o755)
        monkeypatch.setenv("AUTOCOMP_CUDA_CACHE", str(earlier))
        backend = make_backend("cpu", cache_dir=str(current), static_checks=False)
        second = await backend.evaluate(backend.load_problem("L1/relu"), hack, EvalContext())
        await backend.aclose()
        assert not second.correct, second.feedback
        if isolation_level() not in ("uid", "none"):
            # the old cache is shown empty wherever the checkout lies (a clone under /tmp
            # too): the candidate found no stored answer and fails the first trial, before
            # the timed calls (on inputs no cache holds) would refuse it anyway
            assert "trial 1/" in second.feedback, second.feedback
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("level", ["none", "user namespaces", "namespaces+uid", "bubblewrap"])
def test_a_candidate_that_ran_without_isolation_is_no_evidence(level):
    # (at level none the candidate ran as the engine's user beside the engine's files)
    result = SandboxResult(0, "", "", False, None, False, False, 0.0, Path("."), isolation=level)
    case = SimpleNamespace(result=result, verdict=Verdict("ok"))
    assert judging._isolated(case) is None  # (a flag, not a refusal)
    assert ("unisolated" in case.verdict.flags) == (level == "none")
    assert case.verdict.scored == (level != "none")
