"""Candidates that try to pass without doing the work, each refused with its reason, and the
honest ones that must stay accepted. Each adversarial candidate here was accepted by the
evaluator of the previous round (see docs/evaluation-validity.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from autocomp_gemmini import catalog, evaluate as gem_eval, toolchain
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.config import GemminiConfig
from autocomp_gemmini.elf import symbols

from autocomp_core import IMPOSSIBLE_RESULT, EvalContext, FailureKind
from autocomp_core.executors.guarded import evaluate_guarded
from autocomp_core.sandbox import (
    BUBBLEWRAP,
    NAMESPACES,
    USER_NAMESPACES,
    isolation_level,
    private_workdir,
)

HERE = Path(__file__).parent
ADVERSARIAL = HERE / "adversarial"
EXTERNAL = {
    "mode": "external",
    "external_command": [
        *toolchain.spike_command(),
        "--isa=rv64gc_zicntr",
        f"--extlib={toolchain.extension_path()}",
        "--extension=gemmini",
        "-m256",
        "{elf}",
    ],
}


def evaluate(problem_id: str, code: str, options: dict | None = None, seed: int = 1, **hardware):
    backend = GemminiBackend(hardware or None, options)
    return asyncio.run(
        backend.evaluate(backend.load_problem(problem_id), code, EvalContext(seed=seed))
    )


def source(problem_id: str, which: str = "baseline") -> str:
    spec = catalog.specs()[problem_id]
    return (
        catalog.vendor_path(spec) if which == "vendor" else catalog.baseline_path(spec)
    ).read_text()


# ---------------------------------------------------------------------------- external mode
def test_external_mode_refuses_a_printed_cycle_count():
    """The issue's hole: this candidate was accepted with 1 cycle (honest: 238)."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_prints_report.c").read_text(), EXTERNAL)
    assert result.failure is FailureKind.REJECTED and result.status == "forged_report"
    assert "'cycles: 1'" in result.feedback


def test_external_mode_refuses_a_report_line_without_the_nonce():
    code = source("gemm-64x64x64", "vendor").replace(
        "WS);\n", 'WS);\n  gemmini_fence();\n  printf("AUTOCOMP-0123456789abcdef cycles 1\\n");\n'
    )
    result = evaluate("gemm-64x64x64", code, EXTERNAL)
    assert (
        result.failure is FailureKind.REJECTED
        and "imitating the harness's report" in result.feedback
    )


def test_external_mode_refuses_a_candidate_that_links_to_the_nonce():
    """The nonce is written into the linked program (harness_params), so a candidate that links
    to that symbol by a name no text screen sees would tag its own report line: the check of
    what the candidate's object refers to refuses it before it runs."""
    code = (ADVERSARIAL / "gemm_reads_the_nonce.c").read_text()
    assert "harness_params" not in code
    result = evaluate("gemm-64x64x64", code, EXTERNAL)
    assert result.failure is FailureKind.REJECTED
    assert "refers to harness_params" in result.feedback


def test_external_mode_verdict_is_the_evaluators():
    good = evaluate("gemm-64x64x64", source("gemm-64x64x64", "vendor"), EXTERNAL)
    assert good.correct and good.metric > 0, good.feedback
    assert any("nonce" in c for c in good.verification["checks"])
    # a wrong answer is found by the hash, and the harness's own note says where
    wrong = evaluate(
        "gemm-64x64x64",
        source("gemm-64x64x64").replace("GEMM_SCALE);", "GEMM_SCALE * 8);"),
        EXTERNAL,
    )
    assert wrong.failure is FailureKind.WRONG_ANSWER and "differ" in wrong.feedback
    # a write past the output array changes the guard hashes
    past = source("gemm-64x64x64").replace(
        "  gemmini_fence();\n}", "  gemmini_fence();\n  C[GEMM_M][3] = 1;\n}"
    )
    result = evaluate("gemm-64x64x64", past, EXTERNAL)
    assert (
        result.failure is FailureKind.WRONG_ANSWER and "outside the output array" in result.feedback
    )


def test_report_hash_matches_the_harness_formula():
    blob = bytes(range(256)) * 3 + b"tail"
    key, h = 0x1234567890ABCDEF | 1, 0
    for i in range(0, len(blob), 8):
        h = (h * key + int.from_bytes(blob[i : i + 8], "little")) % 2**64
    assert gem_eval.report_hash(blob, 0x1234567890ABCDEF) == (h * key + len(blob)) % 2**64


# ---------------------------------------------------------------------------- model mode
def test_calling_the_harness_by_name_is_refused():
    """Restarting the measured region from inside solution() measured 5 cycles (honest: 2250)."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_restarts_measurement.c").read_text())
    assert result.failure is FailureKind.REJECTED and "harness_roi_begin" in result.feedback


def test_calling_the_harness_by_address_is_refused():
    """The same without naming it: harness and runtime are linked before the candidate, so the
    distance from printf (allowed) to harness_roi_begin is fixed. The harness's code is machine
    memory: the user mode cannot run it (and the model refuses a second begin, and any begin not
    from the machine mode)."""
    spec, hw = catalog.specs()["gemm-64x64x64"], GemminiConfig()
    with private_workdir("test-gemmini-") as work:
        built = asyncio.run(gem_eval.build(work, spec, source("gemm-64x64x64"), hw, 1, True, 60))
        syms = symbols(built.elf)
    delta = syms["harness_roi_begin"][0] - syms["printf"][0]
    code = source("gemm-64x64x64", "vendor").replace(
        "WS);\n", f"WS);\n  gemmini_fence();\n  ((void (*)(void))((char *)printf + {delta}))();\n"
    )
    result = evaluate("gemm-64x64x64", code)
    assert result.failure is FailureKind.CRASH and "instruction access fault" in result.feedback


def test_code_planted_to_run_after_the_measured_region_never_runs():
    """It rewrote the model's results file through the HTIF mailbox after the region ended and
    was accepted at 1100 cycles (its real cost: the vendor's 2250 and a stack scan). The harness's
    stack is machine memory now: the scan faults."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_rewrites_results.c").read_text())
    assert result.failure is FailureKind.CRASH and "load access fault" in result.feedback


# ------------------------------------- model mode: the candidate runs in user mode behind PMP
def test_result_files_written_through_the_host_proxy_are_refused():
    """It wrote outputs.bin and results.json itself through Spike's HTIF syscalls and exited 0
    without ending the measured region: accepted at 1100 cycles (honest: 2250). The mailbox is
    machine memory: the first store faults."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_forges_result_files.c").read_text())
    assert result.failure is FailureKind.CRASH and "store access fault" in result.feedback
    assert "address 0x80001000" in result.feedback


@pytest.mark.parametrize(
    "fixture, fault",
    [
        ("gemm_pasted_asm_rewinds_counter.c", "illegal instruction"),  # minstret: machine CSR
        ("gemm_runs_code_from_data.c", "instruction access fault"),  # data is not executable
        ("gemm_patches_harness_code.c", "load access fault"),  # harness code: machine memory
    ],
)
def test_cpu_work_hidden_from_the_count_is_refused(fixture, fault):
    """Each did the GEMM on the CPU (about 2 million instructions) and hid it from the count
    (accepted at 1,273, 1,288 and 1,267 cycles before, honest 2,250); in user mode behind PMP
    each faults."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / fixture).read_text())
    assert result.failure is FailureKind.CRASH and fault in result.feedback, result.feedback


CPU_GEMM = (
    "  matmul_cpu(false, false, GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K,"
    " GEMM_N, GEMM_N, GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,"
    " GEMM_SCALE, true);\n"
)


def test_an_honest_candidate_keeps_everything_the_user_mode_allows():
    """printf (an ecall the machine mode serves), read_cycles(), its own static data, a stack
    array, its constants, and an mvin from its read-only data: accepted, the line printed."""
    result = evaluate(
        "gemm-64x64x64", (HERE / "candidates" / "gemm_user_mode_honest.c").read_text()
    )
    assert result.correct, result.feedback
    assert "user mode: 64 x 64, scratch 1, clock running 1" in result.stdout


def test_a_command_not_issued_through_the_header_is_refused():
    """The model counts instructions with Spike's own counter, which is exact right after the
    header's counter read before each command. A command issued without it (pasted inline
    assembly, its rd naming a made-up count) is refused."""
    fake_count = "#define PASTE(a, b) a##b\n#define INLINE PASTE(__as, m__)\n" + source(
        "gemm-64x64x64", "vendor"
    ).replace(
        "WS);\n",
        "WS);\n  gemmini_fence();\n"
        + CPU_GEMM
        + '  INLINE volatile(".insn r CUSTOM_3, 3, 123, %0, x0, x0" :: "r"(1ull) : "memory");\n',
        1,
    )
    result = evaluate("gemm-64x64x64", fake_count)
    assert result.failure is FailureKind.REJECTED, result.feedback
    assert "not issued through the gemmini.h macros" in result.feedback


def test_a_jump_past_the_counter_read_hides_no_instruction():
    """The residual case: hand-written assembly reads the counter, runs ~100 instructions and
    jumps to a command past the header's read. Spike's counter then lags by those instructions
    when the command issues (it moves the command's issue time, never the count): the region's
    end is exact, and every instruction is counted."""
    jump = (
        '  INLINE volatile("csrr t0, instret\\n addi t1, x0, 50\\n 1: addi t1, t1, -1\\n'
        ' bnez t1, 1b\\n j 2f\\n csrr t0, instret\\n 2: .insn r CUSTOM_3, 3, 123, t0, x0, x0\\n"'
        ' ::: "t0", "t1", "memory");\n'
    )
    code = "#define PASTE(a, b) a##b\n#define INLINE PASTE(__as, m__)\n" + source(
        "gemm-64x64x64", "vendor"
    ).replace("WS);\n", "WS);\n" + jump, 1)
    result = evaluate("gemm-64x64x64", code)
    vendor = evaluate("gemm-64x64x64", source("gemm-64x64x64", "vendor"))
    assert result.correct and result.metric > vendor.metric, result.feedback
    counted = result.extra["cpu_instructions"] - vendor.extra["cpu_instructions"]
    assert counted >= 100, counted


def test_accelerator_dma_cannot_reach_the_harness():
    """Gemmini's DMA is the model's, not the CPU's: it is held to the user data the same way (an
    mvin from the HTIF mailbox, an mvout into it would go around PMP)."""
    for command in (
        "gemmini_mvin((const elem_t *)0x80001000u, 0);",
        "gemmini_mvout((elem_t *)0x80001000u, 0);",
    ):
        code = source("gemm-64x64x64", "vendor").replace(
            "WS);\n",
            "WS);\n  gemmini_fence();\n  gemmini_config_ld(DIM * sizeof(elem_t));\n"
            f"  gemmini_config_st(DIM * sizeof(elem_t));\n  {command}\n  gemmini_fence();\n",
            1,
        )
        result = evaluate("gemm-64x64x64", code)
        assert not result.correct and "outside the program's data" in result.feedback, (
            command,
            result.feedback,
        )


def _memorized(seed: int) -> str:
    answer = catalog.gemm_gold(catalog.specs()["gemm-64x64x64"].params, seed).ravel()
    table = ", ".join(str(int(v)) for v in answer)
    return (
        f"static const elem_t answer[GEMM_M * GEMM_N] = {{{table}}};\n"
        "void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],\n"
        "              elem_t C[GEMM_M][GEMM_N]) {\n  memcpy(C, answer, sizeof answer);\n}\n"
    )


def test_an_answer_memorized_for_the_run_seed_is_refused(monkeypatch):
    """The inputs used to come from the run's seed: a candidate could carry the answer."""
    code = _memorized(1)
    result = evaluate("gemm-64x64x64", code, seed=1)
    assert result.failure is FailureKind.WRONG_ANSWER, result.feedback
    assert result.verification["seeds"]["timed"] != 1
    monkeypatch.setattr("autocomp_gemmini.backend.evaluation_seeds", lambda *args: [1])
    assert evaluate(
        "gemm-64x64x64", code, seed=1
    ).correct  # right for seed 1: only the fresh seed refuses it


def test_the_candidate_does_not_see_the_seed():
    code = source("gemm-64x64x64").replace(
        "void solution(", "static const int my_seed = SEED;\nvoid solution("
    )
    result = evaluate("gemm-64x64x64", code)
    assert result.failure is FailureKind.COMPILE_ERROR and "SEED" in result.feedback


def test_nan_is_never_a_wildcard():
    code = source("admm-tinympc-iteration").rstrip()[:-1] + "  z[0][0] = 0.0f / 0.0f;\n}\n"
    result = evaluate("admm-tinympc-iteration", code)
    assert result.failure is FailureKind.WRONG_ANSWER and "nan" in result.feedback.lower()
    want = np.array([1.0, np.nan], np.float32).tobytes()
    spec = catalog.specs()["admm-tinympc-iteration"]
    assert gem_eval.compare(spec, want, want, True) is None  # NaN where the gold has NaN matches
    assert gem_eval.compare(spec, np.array([np.nan, np.nan], np.float32).tobytes(), want, True)


def test_fp32_gemm_is_refused_up_front():
    with pytest.raises(ValueError, match="int8 problem"):
        GemminiBackend({"dtype": "fp32"}).load_problem("gemm-64x64x64")
    assert GemminiBackend({"dtype": "fp32"}).load_problem("admm-tinympc-iteration")
    path = ADVERSARIAL / "gemm_prints_report.c"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autocomp_core.cli",
            "eval",
            "gemmini",
            "conv-small-3x3s2",
            str(path),
            "--hw",
            "dtype=fp32",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "int8 problem" in lines[0], out.stderr


def test_eval_json_reports_seed_shape_and_checks(tmp_path):
    path = tmp_path / "gemm.c"
    path.write_text(source("gemm-64x64x64", "vendor"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autocomp_core.cli",
            "eval",
            "gemmini",
            "gemm-64x64x64",
            str(path),
            "--json",
            "--seed",
            "4",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["seed"] == 4
    assert data["verification"]["shapes"] == {"timed": "M=64, N=64, K=64"}
    assert any("guard bytes" in c for c in data["verification"]["checks"])


def test_the_engine_refuses_a_gemmini_result_below_the_bound(monkeypatch):
    backend = GemminiBackend()
    problem = backend.load_problem("gemm-64x64x64")
    monkeypatch.setattr(GemminiBackend, "metric_lower_bound", lambda self, p: 1e6)
    result = asyncio.run(
        evaluate_guarded(backend, problem, source("gemm-64x64x64", "vendor"), EvalContext())
    )
    assert result.status == IMPOSSIBLE_RESULT and result.extra["refused_metric"] < 1e6


# ------------------------------------------ input distribution: every branch of the reference
def test_the_admm_clip_binds_on_both_sides_at_every_seed():
    """The duals were drawn at 0.1 (|u + y| about 0.14): the clip to [-0.5, 0.5] bound on about
    one run in 2,000, and a candidate without it was accepted, faster (15,172 cycles; honest
    15,852). Now a quarter of the duals sit at +1 and a quarter at -1."""
    params = catalog.specs()["admm-tinympc-iteration"].params
    nx, nu, n = params["admm_nx"], params["admm_nu"], params["admm_horizon"]
    for seed in range(200):
        gold = catalog.gold(catalog.specs()["admm-tinympc-iteration"], seed, True)
        z = gold[n * nx + (n - 1) * nu : n * nx + 2 * (n - 1) * nu]
        assert (z == np.float32(params["admm_umax"])).sum() >= 10, seed
        assert (z == np.float32(params["admm_umin"])).sum() >= 10, seed


def test_a_candidate_without_the_admm_clip_is_wrong():
    result = evaluate("admm-tinympc-iteration", (ADVERSARIAL / "admm_drops_the_clip.c").read_text())
    assert result.failure is FailureKind.WRONG_ANSWER, result.feedback
    assert "expected 0.5" in result.feedback or "expected -0.5" in result.feedback


@pytest.mark.parametrize(
    "problem_id", sorted(i for i in catalog.specs() if not i.startswith("admm"))
)
def test_every_int8_problem_saturates_at_every_seed(problem_id):
    """The store unit's clamp to 127 (and ReLU's zero, or -128 without it) must be exercised by
    the checked inputs at every seed; conv-small-3x3s2 never saturated (its largest output was
    about 110), gemm-fc-32x1024x512 saturated on 0 to 6 elements of 32,768."""
    spec = catalog.specs()[problem_id]
    act = spec.params.get("gemm_act", spec.params.get("conv_act"))
    big = catalog.gold(spec, 0, False).size > 100_000
    for seed in range(2 if big else 6):
        out = catalog.gold(spec, seed, False)
        assert (out == 127).sum() >= 20, (seed, (out == 127).sum())
        assert (out == (0 if act else -128)).sum() >= 20, seed


# ------------------- a failure building or running the candidate's program is the candidate's
def test_a_program_too_large_to_link_is_a_compile_error():
    """An 8 GiB static array: the link fails (relocations out of range). It was an infra error
    (a free retry); the trusted objects alone link, so it is the candidate's."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_huge_static_array.c").read_text())
    assert result.failure is FailureKind.COMPILE_ERROR, (result.failure, result.feedback)
    assert "out of range" in result.feedback


def test_a_link_failure_of_the_trusted_objects_alone_stays_an_infra_error(monkeypatch):
    """The other side of the rule: when the trusted objects cannot link without the candidate
    (here a second copy of the harness among them), the failure is the evaluator's."""
    real = gem_eval.trusted.objects

    async def broken(*args, **kwargs):
        objects = await real(*args, **kwargs)
        return [*objects, objects[-1]]

    monkeypatch.setattr(gem_eval.trusted, "objects", broken)
    result = evaluate("gemm-64x64x64", source("gemm-64x64x64", "vendor"))
    assert result.failure is FailureKind.INFRA_ERROR and "duplicate" in result.feedback


def test_a_local_symbol_with_a_harness_name_is_refused():
    """A file-local array named harness_params (pasted by a macro, so no source screen sees it,
    and local, so no link refuses it): writing the seed found two symbols and raised, an infra
    error. The object's defined names are checked before the link."""
    code = (ADVERSARIAL / "gemm_local_harness_symbol.c").read_text()
    assert "harness_params" not in code
    result = evaluate("gemm-64x64x64", code)
    assert result.failure is FailureKind.REJECTED and "defines harness_params" in result.feedback


def test_a_command_the_model_cannot_expand_is_the_candidates_crash():
    """LOOP_CONV_WS with row strides shorter than its rows: the loop expansion raised a numpy
    error, reported as the model's failure (an infra error). It is now the candidate's crash,
    naming the command."""
    result = evaluate("gemm-64x64x64", (ADVERSARIAL / "gemm_conv_loop_short_strides.c").read_text())
    assert result.failure is FailureKind.CRASH, (result.failure, result.feedback)
    assert "loop_conv_ws could not be executed" in result.feedback


# ----------------------------------------------------------- host files at compile time
HIDES = isolation_level() in (NAMESPACES, USER_NAMESPACES, BUBBLEWRAP)


def _reading_host_files(name: str) -> str:
    host_file = toolchain.PACKAGE_DIR / "timing.toml"
    return f'#define HOST_FILE "{host_file}"\n' + (ADVERSARIAL / name).read_text()


@pytest.mark.parametrize(
    "fixture",
    [
        "gemm_embeds_host_files.c",  # accepted, /etc/passwd and timing.toml printed
        "gemm_includes_a_spliced_directive.c",  # timing.toml in the compile diagnostics
        "gemm_includes_by_digraph.c",  # /etc/passwd in the compile diagnostics
    ],
)
def test_directives_that_read_files_are_screened(fixture):
    """The courtesy screen: every spelling of a directive that reads a file."""
    result = evaluate("gemm-64x64x64", _reading_host_files(fixture))
    assert result.failure is FailureKind.REJECTED and "#embed" in result.feedback, result.feedback


@pytest.mark.skipif(not HIDES, reason="dirs are hidden at the namespace and bubblewrap levels only")
@pytest.mark.parametrize(
    "fixture", ["gemm_embeds_host_files.c", "gemm_includes_a_spliced_directive.c"]
)
def test_the_candidates_compiler_sees_no_host_file(fixture):
    """The defense, past the screen (build() compiles what it is given): the compiler sees its
    copies of the headers and the toolchain; /etc and the plugin's sources are empty to it."""
    spec, hw = catalog.specs()["gemm-64x64x64"], GemminiConfig()
    with private_workdir("test-gemmini-") as work:
        built = asyncio.run(
            gem_eval.build(work, spec, _reading_host_files(fixture), hw, 1, True, 60)
        )
    assert built.failure is FailureKind.COMPILE_ERROR and "file not found" in built.message
    assert "root:" not in built.message and "timing model" not in built.message
