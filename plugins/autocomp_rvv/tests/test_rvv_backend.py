"""The rvv backend end to end with the real toolchain: clang-19, qemu-user, Spike."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pluggy
import pytest
from autocomp_rvv.backend import RvvBackend
from autocomp_rvv.config import RvvHardware
from pydantic import ValidationError

from autocomp_core import EvalContext, FailureKind, hookspecs

CANDIDATES = Path(__file__).parent / "candidates"
PROBLEM_IDS = [
    "dwconv3x3_f32",
    "gemm_f32",
    "qs8_add",
    "softmax_expsum_f32",
    "softmax_max_f32",
    "softmax_scale_f32",
    "transpose_f32",
    "vadd_f32",
]


def candidate(name: str) -> str:
    return (CANDIDATES / name).read_text()


async def evaluate(backend: RvvBackend, problem_id: str, code: str, **ctx):
    problem = backend.load_problem(problem_id)
    return await backend.evaluate(problem, code, EvalContext(**ctx))


@pytest.fixture(scope="module")
def backend() -> RvvBackend:
    return RvvBackend()


def test_plugin_registers_the_backend():
    # the installed entry point, and the hook it names (alone, so other plugins cannot interfere)
    (ep,) = [ep for ep in entry_points(group=hookspecs.PROJECT) if ep.name == "rvv"]
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(ep.load())
    assert manager.hook.autocomp_register_backends() == [[RvvBackend]]


def test_problems_ship_baselines_and_context(backend):
    problems = backend.problems()
    assert sorted(p.id for p in problems) == PROBLEM_IDS
    for p in problems:
        assert p.baseline_path is not None and p.baseline_path.read_text() == p.baseline_code
        assert p.metadata["function"] in p.context  # the prototype is shown to the model
        assert backend.metric_lower_bound(p) > 0


def test_knowledge_pack_and_rules(backend):
    problem = backend.load_problem("vadd_f32")
    pack = backend.knowledge(problem)
    assert "vsetvl" in pack.isa and pack.architecture
    assert len(pack.menu) >= 10 and any("LMUL" in item for item in pack.menu)
    assert pack.rules_coding and pack.translation_menu
    assert any(e.triggered_by("use segment loads") for e in pack.examples)
    assert any("VLEN = 128, 256" in rule for rule in backend.rules(problem))


def test_doctor_finds_every_tool(backend):
    missing = [c.name for c in backend.doctor() if not c.ok]
    assert missing == []


def test_hardware_config_is_validated():
    with pytest.raises(ValidationError):
        RvvHardware(vlen=100)
    with pytest.raises(ValidationError):
        RvvHardware(pe_dim=16)  # not an rvv field
    with pytest.raises(ValidationError):
        RvvHardware(core="k230", dlen=256)  # dlen > vlen 128
    hw = RvvHardware(vlen=512)
    assert hw.all_check_vlens == (128, 256, 512) and hw.effective_dlen == 128


@pytest.mark.asyncio
@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
async def test_baseline_correct_and_vectorized_candidate_faster(backend, problem_id):
    base = await evaluate(backend, problem_id, backend.load_problem(problem_id).baseline_code)
    assert base.correct, base.feedback
    assert base.unit == "cycles" and base.extra["instructions"] > 0
    vec = await evaluate(backend, problem_id, candidate(f"{problem_id}_rvv.c"))
    assert vec.correct, vec.feedback
    assert vec.extra["vector_instructions"] > 0
    assert vec.metric < base.metric
    assert backend.metric_lower_bound(backend.load_problem(problem_id)) <= vec.metric
    assert "Modelled" in vec.feedback and "Exact instruction count" in vec.feedback


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name, kind, words",
    [
        ("vadd_f32_tailbug.c", FailureKind.WRONG_ANSWER, "never written"),
        ("vadd_f32_lmul_mismatch.c", FailureKind.WRONG_ANSWER, "elements of `c` wrong"),
        ("vadd_f32_oob.c", FailureKind.CRASH, "out-of-bounds access past the end of `a`"),
        ("vadd_f32_writes_input.c", FailureKind.CRASH, "write into the read-only input `a`"),
        ("vadd_f32_syntax_error.c", FailureKind.COMPILE_ERROR, "candidate.c:5:"),
        ("vadd_f32_reads_counter.c", FailureKind.REJECTED, "line 6: `minstret`"),
    ],
)
async def test_bad_candidates_are_rejected_with_a_reason(backend, name, kind, words):
    result = await evaluate(backend, "vadd_f32", candidate(name))
    assert not result.correct
    assert result.failure is kind, result.feedback
    assert words in result.feedback


@pytest.mark.asyncio
async def test_library_calls_are_refused(backend):
    result = await evaluate(backend, "softmax_expsum_f32", candidate("softmax_expsum_f32_libm.c"))
    assert result.failure is FailureKind.COMPILE_ERROR and "`expf`" in result.feedback


@pytest.mark.asyncio
async def test_missing_function_is_a_compile_error(backend):
    result = await evaluate(backend, "vadd_f32", "void something_else(void) {}\n")
    assert result.failure is FailureKind.COMPILE_ERROR and "`vadd_f32`" in result.feedback


@pytest.mark.asyncio
async def test_infinite_loop_times_out(backend):
    result = await evaluate(backend, "vadd_f32", candidate("vadd_f32_hang.c"), timeout_s=1.5)
    assert result.failure is FailureKind.TIMEOUT
    assert "the checks did not finish" in result.feedback


@pytest.mark.asyncio
async def test_every_check_vlen_is_exercised():
    code = candidate("vadd_f32_fixed_vlen.c")
    only_256 = await evaluate(RvvBackend(hardware={"check_vlens": [256]}), "vadd_f32", code)
    assert only_256.correct, only_256.feedback
    both = await evaluate(RvvBackend(), "vadd_f32", code)
    assert both.failure is FailureKind.WRONG_ANSWER and "VLEN=128" in both.feedback


@pytest.mark.asyncio
async def test_core_presets_change_the_model():
    code = candidate("gemm_f32_rvv.c")
    saturn = await evaluate(RvvBackend(), "gemm_f32", code)
    k230 = await evaluate(RvvBackend(hardware={"core": "k230"}), "gemm_f32", code)
    wide = await evaluate(RvvBackend(hardware={"vlen": 512, "dlen": 256}), "gemm_f32", code)
    assert saturn.extra["vlen"] == 256 and k230.extra["vlen"] == 128 and wide.extra["vlen"] == 512
    # fewer instructions at a longer VLEN, exact and repeatable
    assert k230.extra["instructions"] > saturn.extra["instructions"] > wide.extra["instructions"]
    assert k230.metric > saturn.metric > wide.metric
