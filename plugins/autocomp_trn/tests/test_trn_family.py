"""Problem families: each trn problem's family, shapes and dtypes for the playbook and schedule
reuse, its shape siblings, its held-out shape (``TrnBackend.held_out_problem``: a program
hard-coded to the searched shape is refused there, every honest program passes there), and the
last seed that catches a softmax without its row max on sd_attention (red-team finding a07)."""

from __future__ import annotations

import asyncio
import subprocess

import numpy as np
import pytest
from autocomp_core import EvalContext
from autocomp_core.ledger.playbook import Entry, features
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing import LLMTestServer, Proposals, optimize_args, preloaded_cli
from test_trn_engine import SWIGLU_NKI, engine_env

from autocomp_trn.adversarial import HONEST, ROOT as ADV
from autocomp_trn.backend import TrnBackend
from autocomp_trn.evaluate import EmulatorEvaluator, Settings
from autocomp_trn.judge import emulate
from autocomp_trn.kernels import OPTIMIZED, TRANSLATED, optimized_source, translated_source
from autocomp_trn.problems.catalog import SATURATED_Q, all_specs, ref_sd_attention, spec_by_id
from autocomp_trn.problems.spec import FULL_SUFFIX, HELD_OUT_SUFFIX, LEGACY_SUFFIX

BACKEND = TrnBackend({"mode": "emulator", "generation": "trn2"}, {"seeds": 2})
SPECS = all_specs()
HELD_OUT_IDS = [s.id for s in SPECS if s.has_held_out]


async def _evaluate(problem, code: str, seed: int = 0):
    return await BACKEND.evaluate(problem, code, EvalContext(seed=seed))


def evaluate(problem, code: str, seed: int = 0):
    return asyncio.run(_evaluate(problem, code, seed))


# ---------------------------------------------------------------- family metadata and siblings


def test_every_problem_carries_its_family_shapes_and_dtypes():
    for problem in BACKEND.problems():
        spec = spec_by_id(problem.id)
        family, shapes, dtypes = features(problem.id, problem.metadata)
        assert family == spec.family_id == problem.metadata["family"], problem.id
        assert shapes == [d for i in spec.inputs for d in i.shape], problem.id
        assert set(dtypes) >= {i.dtype for i in spec.inputs}, problem.id
    # the @legacy and @full variants are the same family (the id without its suffixes)
    for variant in ("tutorial/gemm@legacy", "tutorial/gemm@full", "tutorial/gemm@legacy@full"):
        problem = BACKEND.load_problem(variant)
        assert features(variant, problem.metadata)[0] == "tutorial/gemm"
    full = BACKEND.load_problem("tutorial/gemm@full").metadata["shapes"]
    assert full == [8192, 4096, 8192, 8192]


def _distance(a: str, b: str) -> float:
    """The playbook's distance from an entry recorded on problem ``a`` to problem ``b``."""
    fa, sa, da = features(a, BACKEND.load_problem(a).metadata)
    fb, sb, _ = features(b, BACKEND.load_problem(b).metadata)
    entry = Entry("trn", fa, a, sa, da, "runs/x", 2.0, [], [])
    return entry.distance(fb, sb)


@pytest.mark.parametrize(
    ("problem", "sibling", "other"),
    [
        ("tutorial/attention", "tutorial/attention_seq1024", "tutorial/sd_attention"),
        ("tutorial/gemm", "tutorial/gemm_1024x1024x1024", "pytorch/linear_relu"),
        ("llama/mlp_decode_b1", "llama/mlp_decode_b32", "llama/mlp_prefill"),
    ],
)
def test_shape_siblings_share_a_family_and_are_nearer_than_another_family(problem, sibling, other):
    assert spec_by_id(problem).family_id == spec_by_id(sibling).family_id
    assert spec_by_id(problem).family_id != spec_by_id(other).family_id
    assert spec_by_id(problem).inputs != spec_by_id(sibling).inputs
    assert _distance(problem, sibling) < 10 <= _distance(problem, other)
    assert _distance(sibling, problem) < _distance(sibling, other)


# ---------------------------------------------------------------- the held-out problem


def test_every_problem_has_a_held_out_shape_or_says_why_not():
    for spec in SPECS:
        problem = BACKEND.load_problem(spec.id)
        held = BACKEND.held_out_problem(problem)
        if not spec.has_held_out:
            assert held is None and spec.fixed_shape, spec.id
            assert "at exactly the shapes above" in problem.context
            continue
        assert held is not None and held.id == spec.id + HELD_OUT_SUFFIX, spec.id
        held_spec = spec_by_id(held.id)
        assert held_spec.inputs != spec.inputs, spec.id
        assert [i.name for i in held_spec.inputs] == [i.name for i in spec.inputs]
        assert [len(i.shape) for i in held_spec.inputs] == [len(i.shape) for i in spec.inputs]
        # deterministic, and it is the family's: the playbook sees the same family
        assert BACKEND.held_out_problem(problem).id == held.id
        assert held.metadata["family"] == problem.metadata["family"]
        # the prompt states the rule, never the held-out shape itself
        assert spec.shape_rule in problem.context and "never hard-code a size" in problem.context
        assert held_spec.describe_shapes() not in problem.context, spec.id
        # the held-out problem has no held-out problem of its own
        assert BACKEND.held_out_problem(held) is None


def test_an_original_shape_is_held_out_at_the_checked_shape_and_legacy_keeps_its_baseline():
    full = BACKEND.load_problem("tutorial/attention" + FULL_SUFFIX)
    held = spec_by_id(BACKEND.held_out_problem(full).id)
    assert held.inputs == spec_by_id("tutorial/attention").inputs
    legacy = BACKEND.held_out_problem(BACKEND.load_problem("tutorial/gemm" + LEGACY_SUFFIX))
    assert legacy.id == "tutorial/gemm@legacy@heldout"
    assert spec_by_id(legacy.id).baseline_path == spec_by_id("tutorial/gemm@legacy").baseline_path
    assert BACKEND.held_out_problem(BACKEND.load_problem("advanced/csa_16384")) is None


def _honest_programs():
    """(held-out problem id, what, code, generation) for every shipped honest program: the
    baselines (current on trn2, legacy on trn1), the optimized and translated kernels, the
    adversarial suite's honest fixtures (on trn1, as their own test runs them) and the kernel the
    engine test's translation run keeps."""
    jobs = []
    for s in SPECS:
        if not s.has_held_out:
            continue
        if s.language == "nki":
            jobs.append((s.id, "baseline", s.baseline_code(), "trn2"))
        if s.has_legacy:
            legacy = spec_by_id(s.id + LEGACY_SUFFIX).baseline_code()
            jobs.append((s.id + LEGACY_SUFFIX, "legacy baseline", legacy, "trn1"))
        if s.id in OPTIMIZED:
            jobs.append((s.id + LEGACY_SUFFIX, "optimized", optimized_source(s.id), "trn1"))
        if s.id in TRANSLATED:
            jobs.append((s.id, "translated", translated_source(s.id), "trn2"))
    for h in HONEST:
        if spec_by_id(h.problem).has_held_out:
            jobs.append((h.problem, h.file, h.source, "trn1"))
    jobs.append(("pytorch/swiglu", "the translation run's kernel", SWIGLU_NKI, "trn2"))
    return jobs


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pid", "what", "code", "generation"),
    _honest_programs(),
    ids=[f"{j[0]}:{j[1]}" for j in _honest_programs()],
)
def test_every_honest_program_passes_at_the_held_out_shape(pid, what, code, generation):
    """Two seeds: the second is the stressed or edited one where the problem declares it. The
    held-out shape costs no more than the searched one: the emulator's time grows with the
    trace's instructions, and the held-out trace has no more."""
    held = emulate(spec_by_id(pid + HELD_OUT_SUFFIX), code, seeds=[5, 6], generation=generation)
    assert held["status"] == "ok", held.get("message")
    if what == "baseline":
        searched = emulate(spec_by_id(pid), code, seeds=[5], generation=generation, numeric=False)
        assert held["instructions"] <= searched["instructions"], (held, searched)


HARD_CODED = {
    # the baselines with the searched shape written in, instead of read from the inputs
    "tutorial/rmsnorm": ("num_rows, num_cols = a_tensor.shape", "num_rows, num_cols = 512, 4096"),
    "tutorial/attention_seq1024": ("d_head, seq_q = q_ref.shape", "d_head, seq_q = 128, 1024"),
}


@pytest.mark.parametrize("pid", sorted(HARD_CODED))
def test_a_program_hard_coded_to_the_searched_shape_is_refused_at_the_held_out_one(pid):
    problem = BACKEND.load_problem(pid)
    code = problem.baseline_code.replace(*HARD_CODED[pid])
    assert code != problem.baseline_code
    searched = evaluate(problem, code)
    assert searched.correct, searched.feedback
    held = evaluate(BACKEND.held_out_problem(problem), code, seed=7)
    assert not held.correct and held.failure is not None
    honest = evaluate(BACKEND.held_out_problem(problem), problem.baseline_code, seed=7)
    assert honest.correct, honest.feedback


def _fused_rmsnorm() -> str:
    return (ADV / "honest" / "rmsnorm_current_fused.py").read_text()


def test_a_run_whose_only_faster_program_is_hard_coded_reports_the_baseline(tmp_path):
    """The engine's held-out check on the real backend: the fused RMSNorm, right at the searched
    512 x 4096 but with that shape written in, is labelled overfit and the baseline stays best."""
    hard_coded = _fused_rmsnorm().replace(
        "num_rows, num_cols = a_tensor.shape", "num_rows, num_cols = 512, 4096"
    )
    assert hard_coded != _fused_rmsnorm()
    proposals = Proposals(
        {"sum the squares inside the activation that squares them": hard_coded},
        fallback="sum the squares inside the activation that squares them",
    )
    server = LLMTestServer(proposals).start_in_thread()
    run_dir = tmp_path / "run"
    try:
        done = subprocess.run(
            [
                *preloaded_cli(),
                *optimize_args(
                    "trn",
                    "tutorial/rmsnorm",
                    f"openai-compatible@{server.openai_base_url}::scripted",
                    str(run_dir),
                    sets=[
                        'hardware.mode="emulator"',
                        "backend_options.seeds=2",
                        "playbook.enabled=false",
                    ],
                ),
            ],
            env=engine_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.stop_thread()
    assert done.returncode == 0, done.stderr[-3000:]
    store = RunStore(run_dir)
    found = [c for c in store.candidates() if c.code and "512, 4096" in c.code]
    assert found and found[0].correct  # right where the search looked, and faster
    assert found[0].score < store.candidates()[0].score
    assert store.overfit() == {found[0].id}
    best = (run_dir / "best.py").read_text().strip()
    assert best == BACKEND.load_problem("tutorial/rmsnorm").baseline_code.strip()


# ---------------------------------------------------------------- a07: a saturated row


def test_the_last_seed_saturates_one_row_beyond_what_exp_holds_without_the_row_max():
    spec = spec_by_id("tutorial/sd_attention")
    one, two = spec.make_inputs([5]), spec.make_inputs([5, 6])
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(one, two))  # only the last seed changes
    q, k, v = (x[1].astype(np.float64) for x in two)
    rows = np.flatnonzero((q == SATURATED_Q).all(axis=1))
    keys = np.flatnonzero((k == 1.0).all(axis=1))
    assert len(rows) == 1 and len(keys) == 1
    scores = q[rows[0]] @ k.T * 0.125
    assert scores.max() > 89 > np.log(np.finfo(np.float32).max)  # exp overflows fp32 there
    assert np.sort(scores)[-2] < scores.max() - 40  # ... and the softmax is that key alone
    out = ref_sd_attention(q, k, v)[0]
    assert np.array_equal(out[rows[0]].astype("bfloat16").astype(np.float64), out[rows[0]])
    assert spec.make_inputs([7, 6])[0][1].max() == SATURATED_Q  # a function of the seed alone


def _no_row_max() -> str:
    """sd_attention's baseline with the softmax's row max neither computed nor subtracted."""
    code = spec_by_id("tutorial/sd_attention").baseline_code()
    start = code.index("        neg_max = nl.ndarray")
    end = code.index("        row_sum = nl.ndarray")
    cut = code[:start] + code[end:]
    cut = cut.replace("bias=neg_max_scaled, ", "")
    assert "neg_max" not in cut
    return cut


def test_a_softmax_without_its_row_max_is_refused_on_sd_attention():
    problem = BACKEND.load_problem("tutorial/sd_attention")
    one_seed = asyncio.run(
        EmulatorEvaluator(Settings("trn2", seeds=1)).evaluate(spec_by_id(problem.id), _no_row_max())
    )
    assert one_seed.ok  # right on the drawn inputs: only the saturated row tells
    result = evaluate(problem, _no_row_max())
    assert not result.correct and result.status == "wrong_answer", result.feedback


@pytest.mark.parametrize(
    ("pid", "code", "generation"),
    [
        ("tutorial/sd_attention", None, "trn2"),
        ("tutorial/sd_attention@legacy", None, "trn1"),
        ("tutorial/sd_attention@legacy", optimized_source("tutorial/sd_attention"), "trn1"),
        ("tutorial/sd_attention", (ADV / "honest" / "sd_attention_fp32.py").read_text(), "trn1"),
    ],
)
def test_honest_sd_attention_kernels_pass_the_saturated_seed(pid, code, generation):
    spec = spec_by_id(pid)
    result = emulate(spec, code or spec.baseline_code(), seeds=[5, 6], generation=generation)
    assert result["status"] == "ok", result.get("message")
