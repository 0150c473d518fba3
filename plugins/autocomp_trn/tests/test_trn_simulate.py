"""The nki.simulate differential check without the Neuron SDK: the probes are real kernels (each
passes on the emulator against its NumPy reference), the command refuses to pass where the SDK is
absent, and the element-wise comparison is right on arrays made here.

What stays unverified (no SDK here): running ``runtime/simulate_main.py`` on a real
``nki.simulate``, and every agree/differ verdict it would give (README, Neuron mode)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from autocomp_trn import probes, simdiff
from autocomp_trn.cli import trn
from autocomp_trn.emulator.hardware import GENERATIONS
from autocomp_trn.evaluate import child_env
from autocomp_trn.judge import emulate

SDK_HERE = importlib.util.find_spec("nki") is not None


def test_there_are_at_least_twenty_probes_over_the_emulated_instructions():
    from autocomp_trn.emulator import isa_v2

    assert len(probes.PROBES) >= 20
    assert len({p.name for p in probes.PROBES}) == len(probes.PROBES)
    covered = {p.instruction for p in probes.PROBES}
    assert covered <= set(isa_v2.PUBLIC) and len(covered) >= 20


@pytest.mark.parametrize("probe", probes.PROBES, ids=lambda p: p.name)
def test_every_probe_is_a_current_api_kernel_that_passes_on_the_emulator_on_every_generation(
    probe,
):
    assert "neuronxcc" not in probe.code and probe.code.startswith(probes.HEADER)
    for generation in sorted(GENERATIONS):
        result = emulate(probe.spec(), probe.code, seeds=[3, 4], generation=generation)
        if generation in probe.generations:
            assert result["status"] == "ok", (generation, result.get("message"))
        else:  # an instruction the target lacks is refused, naming the rule
            assert result["status"] == "compile_error", generation
            assert (
                f"nisa.{probe.instruction} is available only on NeuronCore-v" in result["message"]
            )


def test_a_probe_fails_against_a_wrong_reference():
    """The probes' check can fail: the add kernel judged against a - b is a wrong answer."""
    from dataclasses import replace

    add = probes.probe_by_name("tensor_tensor_add")
    wrong = replace(add, reference=lambda a, b: a - b)
    assert emulate(wrong.spec(), wrong.code, generation="trn2")["status"] == "wrong_answer"


def test_the_emulator_side_returns_the_outputs_per_seed():
    p = probes.probe_by_name("tensor_tensor_multiply")
    (out,) = simdiff.emulated(p.spec(), p.code, [1, 2], "trn2")
    a, b = p.spec().make_inputs([1, 2])
    assert out.shape == (2, 128, 512)
    np.testing.assert_allclose(out, a * b, rtol=1e-6)


def test_the_emulator_side_reports_a_refused_kernel():
    p = probes.probe_by_name("dma_copy")
    with pytest.raises(
        simdiff.Refused, match=r"^compile_error .*dma_copy dst \[128, 256\] and src"
    ):
        simdiff.emulated(
            p.spec(), p.code.replace("dst=res, src=ta", "dst=res[:, 0:256], src=ta"), [1], "trn2"
        )


@pytest.mark.skipif(
    SDK_HERE, reason="the Neuron SDK is installed here: its absence cannot be shown"
)
def test_without_the_sdk_the_command_says_so_in_one_line_and_fails():
    result = CliRunner().invoke(trn, ["simulate-diff"])
    assert result.exit_code == simdiff.NO_SDK
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "nki.simulate is not available" in lines[0]
    assert "agree" not in result.output


@pytest.mark.skipif(
    SDK_HERE, reason="the Neuron SDK is installed here: its absence cannot be shown"
)
def test_without_the_sdk_the_simulator_process_reports_no_sdk(tmp_path):
    (tmp_path / "request.json").write_text(json.dumps({"jobs": []}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autocomp_trn.runtime.simulate_main",
            str(tmp_path / "request.json"),
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    line = run.stdout.strip().splitlines()[-1]
    assert line.startswith("AUTOCOMP_TRN_SIMULATED ")
    assert json.loads(line.split(" ", 1)[1])["status"] == "no_sdk"


def test_list_works_without_the_sdk():
    result = CliRunner().invoke(trn, ["simulate-diff", "--list", "--probe", "activation_*"])
    assert result.exit_code == 0
    assert "activation_exp" in result.output and "tensor_tensor_add" not in result.output


def test_the_comparison_finds_each_kind_of_difference():
    """On arrays made here (not a stand-in for the simulator): agreement, a drift beyond the
    tolerance, NaN on one side only, a shape mismatch; NaN on both sides agrees."""
    s = np.linspace(-1, 1, 24).reshape(1, 4, 6)
    row = simdiff.difference("x", s + 1e-7, s, 1e-5, 1e-5, "float32")
    assert row.status == "agree" and row.max_abs == pytest.approx(1e-7)
    drifted = s.copy()
    drifted[0, 2, 3] += 0.01
    row = simdiff.difference("x", drifted, s, 1e-5, 1e-5, "float32")
    assert row.status == "differ" and row.bad == 1 and row.max_abs == pytest.approx(0.01)
    nan_one = s.copy()
    nan_one[0, 0, 0] = np.nan
    assert simdiff.difference("x", nan_one, s, 1e-5, 1e-5, "float32").status == "differ"
    nan_both = s.copy()
    nan_both[0, 0, 0] = np.nan
    assert simdiff.difference("x", nan_both, nan_both.copy(), 0, 0, "float32").status == "agree"
    assert simdiff.difference("x", s[:, :2], s, 1, 1, "float32").status == "differ"


def test_the_report_passes_only_when_something_was_compared_and_all_agree():
    agree = simdiff.Row("a", "agree", [1], "float32", 0.0, 0.0)
    differ = simdiff.Row("b", "differ", [1], "float32", 1.0, 1.0, bad=1)
    skipped = simdiff.Row("c", "skipped", [1], "float32", note="legacy")
    assert simdiff.report([agree, skipped])[1] == simdiff.AGREE
    assert simdiff.report([agree, differ])[1] == simdiff.DIFFER
    assert simdiff.report([skipped])[1] == simdiff.DIFFER
    text, _ = simdiff.report([agree, differ])
    assert "1 agree, 1 differ" in text.splitlines()[-1]
    assert json.loads(simdiff.report([differ], as_json=True)[0])["counts"]["differ"] == 1


def test_legacy_baselines_are_listed_as_skipped_not_simulated():
    jobs, skipped = simdiff.problem_jobs(("tutorial/*",))
    for job in jobs:
        assert "neuronxcc" not in job.code
    for row in skipped:
        assert row.status == "skipped" and "legacy" in row.note
    assert jobs or skipped


@pytest.mark.skipif(
    SDK_HERE, reason="the Neuron SDK is installed here: its absence cannot be shown"
)
def test_the_check_hands_the_jobs_to_the_simulator_process_which_finds_no_sdk(tmp_path):
    """The request, the inputs and the child process are real; without the SDK the child's
    one-line reason comes back as an error, never as rows."""
    p = probes.probe_by_name("tensor_tensor_add")
    job = simdiff.Job(f"probe/{p.name}", p.spec(), p.code)
    with pytest.raises(RuntimeError, match="nki package is not installed"):
        simdiff.run_check([job], [1], "trn2", tmp_path, timeout_s=120)
    request = json.loads((tmp_path / "request.json").read_text())
    assert request["jobs"][0]["dtypes"] == ["float32", "float32"]
    with np.load(tmp_path / "job0" / "inputs.npz") as z:
        assert z["arr_0"].shape == (1, 128, 512)


def test_each_row_says_whether_the_simulator_itself_meets_the_reference():
    """Which side a difference is on (arrays made here stand for the simulator's output)."""
    p = probes.probe_by_name("tensor_tensor_add")
    (ref,) = simdiff.references(p.spec(), [1, 2])
    a, b = p.spec().make_inputs([1, 2])
    np.testing.assert_allclose(ref, a.astype(np.float64) + b)
    good = simdiff.simulator_against_reference(ref.astype(np.float32), ref, p.spec())
    assert good.startswith("simulator within tolerance")
    bad = simdiff.simulator_against_reference(np.zeros_like(ref), ref, p.spec())
    assert bad.startswith("simulator NOT within tolerance") and "constant" in bad


def test_the_simulator_process_moves_inputs_and_outputs_per_seed(tmp_path):
    """Plumbing only, with a plain NumPy function as the kernel and ``nki.simulate`` replaced by
    the identity: inputs come back in their dtypes (bf16 rounded as stored), one call per seed,
    outputs stacked. This is not a run of nki.simulate (unverified here)."""
    from types import SimpleNamespace

    import ml_dtypes

    from autocomp_trn.runtime import simulate_main

    (tmp_path / "kernel.py").write_text(
        "def probe(a, b):\n    assert a.dtype.name == 'bfloat16'\n    return a.astype('float32') + b\n"
    )
    a = np.random.default_rng(0).standard_normal((2, 4, 8)).astype(np.float32)
    b = np.ones((2, 4, 8), np.float32)
    np.savez(tmp_path / "inputs.npz", a, b)
    job = {
        "name": "j",
        "folder": str(tmp_path),
        "entry": "probe",
        "dtypes": ["bfloat16", "float32"],
    }
    job["kwargs"] = {}
    out = simulate_main.run_job(SimpleNamespace(simulate=lambda kernel: kernel), job)
    assert out == {"name": "j", "status": "ok", "outputs": 1}
    with np.load(tmp_path / "outputs.npz") as z:
        got = z["arr_0"]
    want = a.astype(ml_dtypes.bfloat16).astype(np.float64) + 1
    assert got.shape == (2, 4, 8) and np.array_equal(got, want)
