"""Hostile and broken candidates, each with the verdict it must get and words its reason must
contain; with the static screen off, the runtime and the trusted replay must still refuse it
(``unscreened``: the verdict and words then). ``HONEST``: correct but unusual kernels that must
stay accepted (a refused honest kernel is a validity defect too)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent


@dataclass(frozen=True)
class Case:
    file: str
    problem: str
    what: str
    status: str
    reason: str
    unscreened: tuple[str, str] | None = None  # (status, reason) with the static screen off
    patch: tuple[str, str] | None = None  # instead of a file: this edit of the problem's baseline

    @property
    def source(self) -> str:
        if self.patch:
            from ..problems.catalog import spec_by_id

            return spec_by_id(self.problem).baseline_code().replace(*self.patch)
        return (ROOT / "hacks" / self.file).read_text()


RMS = "tutorial/rmsnorm"
CASES = [
    Case(
        "h01_outputs_never_written.py",
        RMS,
        "outputs never written",
        "compile_error",
        "never written",
    ),
    Case("h02_all_zeros.py", RMS, "all zeros", "wrong_answer", "constant"),
    Case(
        "h03_input_copied.py",
        RMS,
        "input copied to output",
        "wrong_answer",
        "differs from the reference",
    ),
    Case(
        "h04_precompute_at_import.py",
        RMS,
        "precomputation at import",
        "rejected",
        "import time",
        ("compile_error", "host NumPy array"),
    ),
    Case("h05_state_across_calls.py", RMS, "state cached across calls", "rejected", "earlier call"),
    Case("h06_shape_conditional.py", RMS, "shape-conditional fast path", "wrong_answer", "NaN"),
    Case(
        "h07_call_count_conditional.py",
        RMS,
        "call-count conditional fast path",
        "rejected",
        "second call",
    ),
    Case(
        "h08_detect_emulator.py",
        RMS,
        "detecting the emulator",
        "rejected",
        "evaluation harness",
        ("wrong_answer", "constant"),
    ),
    Case(
        "h09_read_reference.py",
        RMS,
        "reading the reference",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
    Case(
        "h10_monkeypatch_emulator.py",
        RMS,
        "monkeypatching the emulator",
        "rejected",
        "read-only",
        ("rejected", "must not monkeypatch"),
    ),
    Case(
        "h11_patch_cost_counters.py",
        RMS,
        "monkeypatching the cost counters",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
    Case(
        "h12_trace_tampering.py",
        RMS,
        "trace tampering",
        "rejected",
        "__globals__",
        ("wrong_answer", "differs from the reference"),
    ),
    Case(
        "h13_partition_over_128.py",
        RMS,
        "partition dimension over 128",
        "compile_error",
        "exceeds architecture limitation of 128",
    ),
    Case(
        "h14_psum_overflow.py",
        "tutorial/gemm",
        "PSUM overflow",
        "compile_error",
        "gemm_moving_fmax",
    ),
    Case(
        "h15: the legacy cumsum baseline with its carried loop made affine",
        "advanced/cumsum@legacy",
        "affine_range carried dependency",
        "compile_error",
        "affine_range iterations must be independent",
        patch=("nl.sequential_range", "nl.affine_range"),
    ),
    Case("h16_spin_past_limit.py", RMS, "spinning past the limit", "timeout", "limit"),
    Case(
        "h17_host_compute.py",
        RMS,
        "host-side computing on the inputs",
        "compile_error",
        "not NumPy arrays",
    ),
    Case(
        "h18_sleep.py",
        RMS,
        "sleeping past the limit",
        "rejected",
        "kernels may import only",
        ("rejected", "kernels may import only"),
    ),
    Case(
        "h19_symlink_for_the_engine.py",
        RMS,
        "a link planted for the engine to write through",
        "wrong_answer",
        "NaN",
    ),
    Case(
        "h20_planted_standard_module.py",
        RMS,
        "a standard module planted for the replay to import",
        "wrong_answer",
        "NaN",
    ),
    Case(
        "h21_false_onezero_hint.py",
        "tutorial/sd_attention",
        "a false 0/1 matmul hint",
        "rejected",
        "false hint",
    ),
    Case(
        "h22_bf16_output.py",
        RMS,
        "a narrower output dtype",
        "compile_error",
        "the problem expects float32",
    ),
    Case(
        "h23_hbm_scratch_64gib.py",
        RMS,
        "a scratch tensor larger than HBM",
        "rejected",
        "GiB of HBM",
    ),
    Case(
        "h24_softmax_without_max.py",
        "pytorch/softmax",
        "softmax without the max subtraction",
        "wrong_answer",
        "NaN",
    ),
    Case(
        "h25_status_nested_past_the_parser.py",
        RMS,
        "a status nested past the parser's stack",
        "rejected",
        "does not read",
    ),
    Case(
        "h26: the legacy attention baseline exponentiating the scores without subtracting the row max",
        "tutorial/attention@legacy",
        "attention without the max subtraction",
        "wrong_answer",
        "NaN",
        patch=("nl.exp(nl.subtract(s_tile, m_tile))", "nl.exp(s_tile)"),
    ),
    Case(
        "h27_current_partition_over_128.py",
        RMS,
        "partition dimension over 128 (current API)",
        "compile_error",
        "more than the 128 the hardware has",
        ("compile_error", "more than the 128 the hardware has"),
    ),
    Case(
        "h28_mixed_api.py",
        RMS,
        "the current and the legacy API in one kernel",
        "rejected",
        "imports both nki",
        ("compile_error", "imports both the current NKI API"),
    ),
    Case(
        "h30_fori_branch_on_index.py",
        "pytorch/swiglu",
        "a fori_loop body branching in Python on the loop index (compiled once on the device)",
        "compile_error",
        "a fori_loop body is compiled once",
        ("compile_error", "a fori_loop body is compiled once"),
    ),
    Case(
        "h31_split_ring_beyond_sbuf_no_fallback.py",
        "pytorch/swiglu",
        "a split_reused_buffers ring larger than SBUF, with nki_alloc_fallback=False",
        "compile_error",
        "NKI allocation is out of SBUF memory",
        ("compile_error", "NKI allocation is out of SBUF memory"),
    ),
    Case(
        "h29: the current attention baseline exponentiating the scores without subtracting the row max",
        "tutorial/attention",
        "attention without the max subtraction (current API)",
        "wrong_answer",
        "NaN",
        patch=(
            "data=s_tile, op0=nl.subtract, operand0=m_tile",
            "data=s_tile, op0=nl.add, operand0=0.0",
        ),
    ),
]


@dataclass(frozen=True)
class Priced:
    """A kernel the model once priced below what it can run in: accepted, but modelled no faster
    than ``honest`` (a file in ``honest/``; None: the problem's baseline), on ``generation``."""

    file: str
    problem: str
    what: str
    honest: str | None = None
    patch: tuple[str, str] | None = None  # instead of a file: this edit of the problem's baseline
    generation: str = "trn2"

    @property
    def source(self) -> str:
        if self.patch:
            return self.honest_source.replace(*self.patch)
        return (ROOT / "hacks" / self.file).read_text()

    @property
    def honest_source(self) -> str:
        if self.honest:
            return (ROOT / "honest" / self.honest).read_text()
        from ..problems.catalog import spec_by_id

        return spec_by_id(self.problem).baseline_code()


#: dead work for h33: a GpSimd memset and eight VectorE copies into a tile nothing reads
_DEAD_COPIES = """    junk_src = nl.ndarray((128, 4096), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=junk_src, value=1.0, engine=nisa.gpsimd_engine)
    junk = nl.ndarray((128, 4096), dtype=nl.bfloat16, buffer=nl.sbuf)
    for r in range(8):
        nisa.tensor_copy(dst=junk, src=junk_src)
"""
PRICED = [
    Priced(
        "h32_split_ring_beyond_sbuf.py",
        "pytorch/swiglu",
        "a split_reused_buffers ring larger than SBUF (NKI allocation falls back to neuronx-cc's)",
        honest="swiglu_reused_buffers.py",
    ),
    Priced(
        "h33: the current transpose baseline with eight dead bf16 copies before its loops",
        "advanced/transpose",
        "dead work that reorders the greedy schedule (420.42 -> 412.41 modelled us on trn2)",
        patch=(
            "    for b in nl.affine_range(B):\n",
            _DEAD_COPIES + "    for b in nl.affine_range(B):\n",
        ),
    ),
]


@dataclass(frozen=True)
class Honest:
    file: str
    problem: str
    what: str

    @property
    def source(self) -> str:
        return (ROOT / "honest" / self.file).read_text()


HONEST = [
    Honest("softmax_stable.py", "pytorch/softmax", "softmax with the max subtracted"),
    Honest("sd_attention_fp32.py", "tutorial/sd_attention", "fp32 operands on TensorE"),
    Honest("transpose_into_sbuf.py", "advanced/transpose", "a TensorE transpose assigned to SBUF"),
    Honest("mamba_tutorial_v1.py", "tutorial/mamba", "a 1-D [128] tile from an integer index"),
    Honest("index_floordiv_mod.py", "advanced/conv1d", "// and % in index expressions"),
    Honest("rmsnorm_store_through_ds.py", RMS, "a store through x[:, nl.ds(...)] = ..."),
    Honest("softmax_reduce_cmd.py", "pytorch/softmax", "a sum across ScalarE's reduce registers"),
    Honest(
        "rmsnorm_current_fused.py", RMS, "current API: a fused square-sum and a per-partition scale"
    ),
    Honest(
        "softmax_current_stable.py",
        "pytorch/softmax",
        "current API: softmax with the max subtracted",
    ),
    Honest(
        "swiglu_reused_buffers.py",
        "pytorch/swiglu",
        "current API: two 64 KiB buffers reloaded every iteration (h32's honest twin)",
    ),
    Honest(
        "transpose_current_multi_tile.py",
        "advanced/transpose",
        "current API: four transposes into one PSUM tile",
    ),
]
