"""Candidates that try to pass without doing the work, each refused with its reason; honest but
unusual ones stay accepted. Every adversarial file in tests/adversarial was accepted by the
evaluator before the timed run was checked (see docs/evaluation-validity.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from autocomp_rvv.backend import RvvBackend
from autocomp_rvv.timed import GUARD_BYTES, Layout, Region, outputs_image
from autocomp_rvv.trace import Insn

from autocomp_core import IMPOSSIBLE_RESULT, EvalContext, FailureKind
from autocomp_core.executors.guarded import evaluate_guarded

HERE = Path(__file__).parent
ADVERSARIAL = HERE / "adversarial"


@pytest.fixture(scope="module")
def backend() -> RvvBackend:
    return RvvBackend()


async def evaluate(backend: RvvBackend, code: str, problem_id: str = "vadd_f32", **ctx):
    return await backend.evaluate(backend.load_problem(problem_id), code, EvalContext(**ctx))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name, kind, words",
    [
        # the hole: work skipped where the kernel is timed (15 cycles; honest 1519)
        (
            "vadd_f32_skips_when_timed.c",
            FailureKind.WRONG_ANSWER,
            "the timed run on Spike: benchmark (n=3001)",
        ),
        # static state: the first call (Spike's only one) does nothing
        ("vadd_f32_skips_first_call.c", FailureKind.REJECTED, "static or global variable"),
        ("vadd_f32_caches_by_size.c", FailureKind.REJECTED, "static or global variable"),
        # the kernel asks Spike's host to create a file while it is timed
        ("vadd_f32_htif_escape.c", FailureKind.REJECTED, "outside its outputs and its own stack"),
        # a forged "PASS" line, by a constructor or by the kernel, with the words hidden from the source screen
        ("vadd_f32_forges_pass.c", FailureKind.REJECTED, "`.init_array` section"),
        (
            "vadd_f32_syscall_in_kernel.c",
            FailureKind.REJECTED,
            "the compiled kernel contains `ecall`",
        ),
    ],
)
async def test_adversarial_candidates_are_refused(backend, name, kind, words):
    result = await evaluate(backend, (ADVERSARIAL / name).read_text())
    assert not result.correct
    assert result.failure is kind, result.feedback
    assert words in result.feedback


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name, kind, words",
    [
        # each was accepted when the qemu runs' verdict was printed by the candidate's process
        # machine code in a data array put in a `.text.*` section prints PASS and exits
        ("vadd_f32_code_in_text_section.c", FailureKind.REJECTED, "data in a `.text` section"),
        # the harness's length set to 0 so that nothing is compared: the verifier sets the
        # cases up itself, and the runner's outputs were never written
        ("vadd_f32_rewrites_harness_state.c", FailureKind.WRONG_ANSWER, "was never written"),
        # glibc's write/_exit found by scanning the program: the runner holds no libc (the scan
        # runs off its few pages of code), and what it prints or returns is not a verdict
        ("vadd_f32_calls_found_write.c", FailureKind.CRASH, "VLEN=128: case 0"),
        # mprotect() replaced so the inputs stay writable: one global symbol only
        ("vadd_f32_defines_mprotect.c", FailureKind.REJECTED, "defines `mprotect`"),
    ],
)
async def test_the_candidates_process_holds_no_verdict(backend, name, kind, words):
    result = await evaluate(backend, (ADVERSARIAL / name).read_text())
    assert not result.correct
    assert result.failure is kind, result.feedback
    assert words in result.feedback


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "problem_id, name, words",
    [
        # each was accepted when the checked shapes and inputs were fixed and narrower than the
        # spec: the cases now cover every unroll remainder and draw every input over the
        # spec's whole domain, edges included, at every seed
        ("gemm_f32", "gemm_f32_forgets_two_row_tail.c", "was never written"),
        ("softmax_max_f32", "softmax_max_f32_compares_bits_as_int.c", "expected the maximum -"),
        ("qs8_add", "qs8_add_int16_multipliers.c", "elements of `out` wrong"),
        ("softmax_expsum_f32", "softmax_expsum_f32_assumes_max_8.c", "elements of `y` wrong"),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
async def test_inputs_cover_the_spec_at_every_seed(backend, problem_id, name, words, seed):
    result = await evaluate(backend, (ADVERSARIAL / name).read_text(), problem_id, seed=seed)
    assert not result.correct
    assert result.failure is FailureKind.WRONG_ANSWER, result.feedback
    assert words in result.feedback


@pytest.mark.asyncio
async def test_a_returned_value_the_timed_call_never_stored_is_refused(backend):
    """The kernel leaves through the harness's way back, so its value is never stored: before,
    the verifier judged what the variable held from the last correctness case."""
    code = (ADVERSARIAL / "softmax_max_f32_skips_result_store.c").read_text()
    result = await evaluate(backend, code, "softmax_max_f32")
    assert result.failure is FailureKind.WRONG_ANSWER, result.feedback
    assert "the returned value `result` was never written by the timed call" in result.feedback


@pytest.mark.asyncio
async def test_a_timed_call_past_the_trace_caps_is_the_candidates_failure(backend):
    """10^5 vector stores to its own stack: refused by the cap on the timed call's memory
    accesses, the log read line by line (before, the evaluator held the log whole: 3 GB)."""
    code = (ADVERSARIAL / "vadd_f32_floods_the_trace.c").read_text()
    result = await evaluate(backend, code)
    assert result.failure is FailureKind.REJECTED, result.feedback
    assert "more than 1000000 memory accesses" in result.feedback


@pytest.mark.asyncio
async def test_scalar_core_work_beside_the_vector_unit_stays_above_the_bound(backend):
    """Honest: the scalar core adds four elements per strip through its own memory port. The
    bound counts that port, so the result is not refused as impossible."""
    problem = backend.load_problem("vadd_f32")
    code = (HERE / "candidates" / "vadd_f32_scalar_vector_split.c").read_text()
    result = await evaluate_guarded(backend, problem, code, EvalContext())
    assert result.correct, result.feedback
    assert result.status != IMPOSSIBLE_RESULT
    assert backend.metric_lower_bound(problem) <= result.metric


def _vadd_inputs(seed: int, n: int) -> np.ndarray:
    """c = a + b as the harness computes it for `seed` (xorshift64*, rvv_harness.h)."""
    mask = (1 << 64) - 1
    state = (seed * 0x9E3779B97F4A7C15 + 1) & mask

    def rand_f32() -> np.float32:
        nonlocal state
        x = state
        x ^= x >> 12
        x ^= (x << 25) & mask
        x ^= x >> 27
        state = x
        u = ((x * 0x2545F4914F6CDD1D) & mask) >> 32
        return np.float32(-4) + np.float32(8) * np.float32(u >> 8) * np.float32(1 / 16777216)

    pairs = [(rand_f32(), rand_f32()) for _ in range(n)]
    return np.array([a + b for a, b in pairs], dtype=np.float32)


@pytest.mark.asyncio
async def test_an_answer_memorized_for_a_fixed_seed_is_refused(backend, monkeypatch):
    """Before, the timed run always used seed 1; a kernel could carry that run's answer."""
    table = ", ".join(f"{float(v).hex()}f" for v in _vadd_inputs(1, 3001))
    code = (
        "#include <stdint.h>\n#include <stddef.h>\n"
        f"static const float answer[3001] = {{{table}}};\n"
        "void vadd_f32(const float *a, const float *b, float *c, size_t n) {\n"
        "  if ((uintptr_t)c >= 0x80000000u && (uintptr_t)c < 0x90000000u && n == 3001) {\n"
        "    for (size_t i = 0; i < n; i++) c[i] = answer[i];\n    return;\n  }\n"
        "  for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];\n}\n"
    )
    result = await evaluate(backend, code)
    assert (
        result.failure is FailureKind.WRONG_ANSWER and "the timed run on Spike" in result.feedback
    )
    assert result.verification["seeds"]["timed"] != 1
    # the memorized answer is right for seed 1: only the fresh seed refuses it
    monkeypatch.setattr("autocomp_rvv.backend.evaluation_seeds", lambda *args: [7, 1])
    assert (await evaluate(backend, code)).correct


@pytest.mark.asyncio
async def test_honest_scratch_on_the_stack_and_vlenb_are_accepted(backend):
    result = await evaluate(backend, (HERE / "candidates" / "vadd_f32_stack_scratch.c").read_text())
    assert result.correct, result.feedback


@pytest.mark.asyncio
async def test_seeds_shapes_and_checks_are_reported_and_replay(backend):
    code = (HERE / "candidates" / "vadd_f32_rvv.c").read_text()
    first = await evaluate(backend, code, seed=3)
    again = await evaluate(backend, code, seed=3)
    other = await evaluate(backend, code + "\n", seed=3)
    v = first.verification
    assert v == again.verification and first.metric == again.metric
    assert other.verification["seeds"] != v["seeds"]  # another program, other inputs
    assert v["shapes"]["timed"] == "n=3001" and "n=0" in v["shapes"]["checks"]
    assert any("VLEN=128" in c for c in v["checks"]) and any(
        "rebuilt from the commit log" in c for c in v["checks"]
    )


def test_eval_json_reports_seeds_shapes_and_checks(tmp_path):
    path = tmp_path / "vadd.c"
    path.write_text((HERE / "candidates" / "vadd_f32_rvv.c").read_text())
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autocomp_core.cli",
            "eval",
            "rvv",
            "vadd_f32",
            str(path),
            "--json",
            "--seed",
            "5",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["seed"] == 5
    assert set(data["verification"]) == {"seeds", "shapes", "checks", "model_limits"}
    # the model's limits that apply to this memory-bound kernel (model_limits.py)
    assert [item["limit"] for item in data["verification"]["model_limits"]] == ["memory_hits_only"]


@pytest.mark.asyncio
async def test_the_engine_refuses_an_rvv_result_below_the_bound(monkeypatch):
    """Whatever fooled the harness, a metric below the bound never reaches selection."""
    backend = RvvBackend()
    problem = backend.load_problem("vadd_f32")
    monkeypatch.setattr(RvvBackend, "metric_lower_bound", lambda self, p: 10_000.0)
    result = await evaluate_guarded(
        backend, problem, (HERE / "candidates" / "vadd_f32_rvv.c").read_text(), EvalContext()
    )
    assert result.status == IMPOSSIBLE_RESULT and result.failure is FailureKind.REJECTED


# ---------------------------------------------------------------------------- store checks, no toolchain
LAYOUT = Layout(
    buffers=(Region("a", 0x1000, 16), Region("c", 0x2000, 16)),
    outputs=(Region("c", 0x2000, 16),),
    stack=Region("stack", 0x9000, 0x1000),
)


def store(addr: int, data: bytes) -> Insn:
    return Insn(pc=0x80001234, mnemonic="sw", operands="", stores=((addr, data),))


def test_the_image_holds_what_the_timed_call_wrote():
    image = outputs_image([store(0x2004, b"\1\2\3\4"), store(0x9FF0, b"stack!!!")], LAYOUT)
    assert image[:16] == bytes(4) + b"\1\2\3\4" + bytes(8)
    assert image[16:] == bytes(4) + b"\1" * 4 + bytes(8)  # the written mask


@pytest.mark.parametrize(
    "addr, kind, words",
    [
        (0x2010, FailureKind.CRASH, "past the end of `c`"),
        (0x2000 - GUARD_BYTES, FailureKind.CRASH, "before the start of `c`"),
        (0x1004, FailureKind.CRASH, "read-only input `a`"),
        (
            0xA000,
            FailureKind.REJECTED,
            "outside its outputs and its own stack",
        ),  # above the measuring frame
        (0x80001000, FailureKind.REJECTED, "outside its outputs"),
    ],
)
def test_stores_outside_the_outputs_are_named(addr, kind, words):
    with pytest.raises(Exception) as info:
        outputs_image([store(addr, b"\0" * 4)], LAYOUT)
    assert info.value.kind is kind and words in info.value.feedback


@pytest.mark.asyncio
async def test_a_system_call_the_object_checks_missed_is_refused_by_the_run(backend, tmp_path):
    """The object checks are a courtesy: a kernel whose system call they missed (here the
    object is linked without them) is refused from qemu's own log of the runner's calls."""
    from autocomp_rvv.build import RUNNER_LINK, kernel_flags
    from autocomp_rvv.checks import check_at_vlen, reference_syscalls
    from autocomp_rvv.problems import spec_for

    spec = spec_for(backend.load_problem("vadd_f32"))
    tools = backend._tools()
    cached = await backend._builder._harness_objects(spec)
    source = ADVERSARIAL / "vadd_f32_syscall_in_kernel.c"
    kernel, program = tmp_path / "kernel.o", tmp_path / "prog_check"
    subprocess.run(  # noqa: ASYNC221 (a compile in a test)
        [tools.clang, *kernel_flags(spec, False), "-c", str(source), "-o", str(kernel)], check=True
    )
    subprocess.run(  # noqa: ASYNC221
        [
            tools.clang,
            *RUNNER_LINK,
            str(cached / "harness_runner.o"),
            str(kernel),
            "-o",
            str(program),
        ],
        check=True,
    )
    expected = await reference_syscalls(tools.qemu, cached / "prog_check_reference", 60)
    with pytest.raises(Exception) as info:
        await check_at_vlen(tools.qemu, program, 128, 5, 60, expected)
    assert info.value.kind is FailureKind.REJECTED, info.value.feedback
    assert "system call the harness does not make (`write(1," in info.value.feedback


def test_a_runners_outputs_are_never_read_through_a_link(tmp_path):
    """A runner that left a link (to a file of the user's) in place of its outputs gets
    nothing read: the evaluator opens the outputs without following links."""
    from autocomp_rvv.checks import RUNNER_OUTPUTS, read_outputs

    secret = tmp_path / "secret"
    secret.write_bytes(b"not the runner's")
    run = tmp_path / "run"
    run.mkdir()
    (run / RUNNER_OUTPUTS).symlink_to(secret)
    assert read_outputs(run) is None
    (run / RUNNER_OUTPUTS).unlink()
    (run / RUNNER_OUTPUTS).write_bytes(b"\1\2")
    assert read_outputs(run) == b"\1\2"
