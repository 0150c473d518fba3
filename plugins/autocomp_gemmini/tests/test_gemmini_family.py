"""Problem families: every problem says its family, shapes and dtypes (the playbook and
schedule reuse compare them), and the held-out check runs a search's best programs at another
shape of the family (family.py), where every honest program is right and a program written
for the searched shape's numbers is not. Real clang-19 builds and Spike runs."""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path

import pytest
from autocomp_gemmini import catalog, family
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.config import GemminiConfig

from autocomp_core import EvalContext, FailureKind, Problem
from autocomp_core.api import optimize_async
from autocomp_core.ledger.playbook import Entry, features
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer

CANDIDATES = Path(__file__).parent / "candidates"
HAND_OPTIMIZED = (CANDIDATES / "gemm_hand_optimized.c").read_text()
BACKEND = GemminiBackend()
PROBLEMS = {p.id: p for p in BACKEND.problems()}
WITH_HELD_OUT = [i for i in PROBLEMS if BACKEND.held_out_problem(PROBLEMS[i]) is not None]


def evaluate(problem: Problem, code: str, seed: int = 1):
    return asyncio.run(BACKEND.evaluate(problem, code, EvalContext(seed=seed, timeout_s=300)))


def hard_coded(code: str, spec: catalog.Spec) -> str:
    """`code` with every size macro written as the searched shape's number."""
    for macro, value in spec.defines().items():
        if macro.startswith(("GEMM_", "CONV_")) and macro not in ("GEMM_SCALE", "CONV_SCALE"):
            code = re.sub(rf"\b{macro}\b", value, code)
    return code


# ------------------------------------------------------------------ family, shapes, dtypes
def test_every_problem_says_its_family_shapes_and_dtypes():
    for pid, problem in PROBLEMS.items():
        fam, shapes, dtypes = features(pid, problem.metadata)
        spec = catalog.specs()[pid]
        assert fam == spec.family and shapes == spec.shapes() and shapes, pid
        assert dtypes == (["fp32"] if fam == "admm" else ["int8"]), pid
    gemm = [p for p in PROBLEMS if PROBLEMS[p].metadata["family"] == "gemm"]
    assert sum(p.startswith("gemm-paper-") for p in gemm) == 6 and len(gemm) == 12


def test_gemm_siblings_are_nearer_than_another_family():
    """An entry learned on a published shape is nearer to another GEMM than a convolution's
    entry is, and the nearest GEMM is the one of the closest shape."""

    def entry(pid: str) -> Entry:
        fam, shapes, dtypes = features(pid, PROBLEMS[pid].metadata)
        return Entry("gemmini", fam, pid, shapes, dtypes, "runs/x", 2.0, [], [])

    fam, shapes, _ = features(
        "gemm-resnet50-res2-expand", PROBLEMS["gemm-resnet50-res2-expand"].metadata
    )
    paper = entry("gemm-paper-1-12544x256x64").distance(fam, shapes)
    square = entry("gemm-paper-0-512x512x512").distance(fam, shapes)
    conv = entry("conv-resnet50-res2-3x3").distance(fam, shapes)
    assert paper < square < conv
    held = BACKEND.held_out_problem(PROBLEMS["gemm-paper-1-12544x256x64"])
    assert held is not None and features(held.id, held.metadata)[0] == "gemm"


# ----------------------------------------------------------------------- the held-out rule
def test_held_out_shapes_keep_the_promised_invariants():
    """Every GEMM size changes and stays a multiple of its grain; no more work than the
    searched shape unless every size is one grain; a convolution keeps all but the image
    size, with a consistent output size; ADMM has none. A function of the problem only."""
    for pid, problem in PROBLEMS.items():
        spec, held = catalog.specs()[pid], BACKEND.held_out_problem(problem)
        if spec.family == "admm":
            assert held is None
            continue
        assert held is not None and held.id != pid
        assert BACKEND.held_out_problem(problem).metadata == held.metadata  # type: ignore[union-attr]
        p, q = spec.params, held.metadata["params"]
        changed = {k for k in p if p[k] != q[k]}
        if spec.family == "gemm":
            assert changed == {"gemm_m", "gemm_n", "gemm_k"}, pid
            for key in changed:
                assert q[key] % family.grain(p[key]) == 0, (pid, key)
            sizes, new = spec.shapes(), held.metadata["shapes"]
            one_grain = all(s == family.grain(s) for s in sizes)
            assert one_grain or math.prod(new) <= math.prod(sizes), pid
        else:
            assert changed == {"conv_in_dim", "conv_out_dim"}, pid
            assert q["conv_in_dim"] < p["conv_in_dim"]
            assert q["conv_out_dim"] == family.conv_out_dim(
                q["conv_in_dim"], q["conv_kdim"], q["conv_stride"], q["conv_pad"]
            )
        # the prompt states the rule without the held-out shape
        assert (
            "never as numbers" in problem.context and held.id.split("@")[1] not in problem.context
        )


def test_grain_rule_examples():
    assert family.held_out_gemm([64, 64, 64]) == [128, 128, 128]
    assert family.held_out_gemm([256, 256, 256]) == [192, 192, 192]
    assert family.held_out_gemm([32, 1024, 512]) == [64, 576, 448]
    assert family.held_out_gemm([3136, 256, 64]) == [2048, 192, 128]
    assert family.grain(784) == 16 and family.grain(1024) == 64


def test_a_gemm_that_dim_does_not_tile_is_refused_up_front():
    backend = GemminiBackend(GemminiConfig(pe_dim=32))
    message = "GEMM_M=784 is not a multiple of hardware.pe_dim = 32"
    with pytest.raises(ValueError, match=re.escape(message)):
        backend.load_problem("gemm-paper-5")
    assert backend.load_problem("gemm-paper-4").id == "gemm-paper-4-3136x128x512"


# ------------------------------------------------ honest programs pass at every held-out shape
# the baseline everywhere; the library and the hand-optimized program at all but the published
# shapes (the same code paths at bigger sizes: 12 more evaluations, about 40 s)
LISTED = [pid for pid in WITH_HELD_OUT if not pid.startswith("gemm-paper-")]
HONEST = [(pid, "baseline") for pid in WITH_HELD_OUT]
HONEST += [(pid, "vendor") for pid in LISTED]
HONEST += [(pid, "hand-optimized") for pid in LISTED if pid.startswith("gemm-")]
HONEST += [("gemm-64x64x64", "user-mode")]


@pytest.mark.parametrize("problem_id,version", HONEST)
def test_shipped_honest_programs_are_right_at_the_held_out_shape(problem_id, version):
    problem = PROBLEMS[problem_id]
    code = {
        "baseline": problem.baseline_code,
        "vendor": Path(problem.metadata["vendor_path"]).read_text(),
        "hand-optimized": HAND_OPTIMIZED,
        "user-mode": (CANDIDATES / "gemm_user_mode_honest.c").read_text(),
    }[version]
    held = BACKEND.held_out_problem(problem)
    assert held is not None
    result = evaluate(held, code, seed=5)
    assert result.correct, result.feedback


# ------------------------------------- a program written for the searched numbers is caught
@pytest.mark.parametrize(
    "problem_id,code",
    [("gemm-64x64x64", HAND_OPTIMIZED), ("conv-small-3x3s2", None)],
)
def test_a_shape_hard_coded_program_is_right_searched_and_refused_held_out(problem_id, code):
    problem = PROBLEMS[problem_id]
    program = hard_coded(code or problem.baseline_code, catalog.specs()[problem_id])
    assert "GEMM_M" not in program and "CONV_IN_DIM" not in program
    searched = evaluate(problem, program)
    assert searched.correct, searched.feedback
    held = evaluate(BACKEND.held_out_problem(problem), program)  # type: ignore[arg-type]
    assert not held.correct
    assert held.failure in (FailureKind.WRONG_ANSWER, FailureKind.CRASH), held.feedback


@pytest.mark.asyncio
async def test_a_run_whose_only_faster_program_is_hard_coded_labels_it_overfit(tmp_path):
    """A scripted model answers the hand-optimized program with the sizes written as 64: 3x
    faster than the baseline at the searched shape, wrong at the held-out one. It is labelled
    overfit and the baseline stays the reported best."""
    program = hard_coded(HAND_OPTIMIZED, catalog.specs()["gemm-64x64x64"])
    model = "openai-compatible@{}::scripted"
    async with LLMTestServer(lambda r: f"```c\n{program}```") as server:
        cfg = {
            "backend": "gemmini",
            "problem": "gemm-64x64x64",
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
        }
        summary = await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    try:
        caught = store.candidate("i1-b0-d0")
        assert caught is not None and caught.correct
        assert caught.score < 0.5 * summary.data["initial_score"]
        assert sorted(store.overfit()) == ["i1-b0-d0"]
        verdict = store.held_out_verdicts()["i1-b0-d0"]
        assert verdict["passed"] is False
    finally:
        store.close()
    assert summary.data["best_candidate"] == "root" and summary.data["speedup"] == 1.0
    assert summary.data["held_out"]["overfit"] == ["i1-b0-d0"]
