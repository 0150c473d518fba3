"""``autocomp-core optimize`` on the trn backend, end to end: a real engine subprocess, an LLM
protocol server on 127.0.0.1 whose "model" proposes an honest faster GEMM kernel, a hack (all
zeros) and a broken file; the run is SIGKILLed mid-way and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing import (
    LLMTestServer,
    Proposals,
    fenced,
    is_planning,
    optimize_args,
    preloaded_cli,
)

import autocomp_trn
from autocomp_trn.adversarial import ROOT as ADV
from autocomp_trn.kernels import optimized_source

PROPOSALS = {
    "keep a block of lhsT resident and reuse each rhs tile": optimized_source("tutorial/gemm"),
    "skip the work and write zeros": (ADV / "hacks" / "h02_all_zeros.py")
    .read_text()
    .replace("solution(a_tensor, g_tensor)", "solution(lhsT, rhs)")
    .replace(
        "a_tensor.shape, dtype=a_tensor.dtype", "(lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype"
    )
    .replace("a_tensor.shape[0]", "lhsT.shape[1]"),
    "rewrite with a typo": "import neuronxcc.nki as nki\n@nki.jit\ndef solution(lhsT, rhs)\n    pass\n",
}


respond = Proposals(PROPOSALS, fallback="rewrite with a typo")


def engine_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(autocomp_trn.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    if not entry_points(
        group="autocomp", name="trn"
    ):  # not installed: load the plugin module by name
        env["AUTOCOMP_PLUGINS"] = "autocomp_trn.plugin"
    env["TMPDIR"] = str(tmp_path)  # sandboxes of the killed engine leave their work dirs here
    return env


def test_optimize_keeps_the_honest_kernel_refuses_the_rest_and_resumes_after_sigkill(tmp_path):
    server = LLMTestServer(respond).start_in_thread()
    run_dir = tmp_path / "run"
    cli = [sys.executable, "-c", "from autocomp_core.cli import main; main()"]
    env = engine_env(tmp_path)
    try:
        proc = subprocess.Popen(
            [
                *cli,
                *optimize_args(
                    "trn",
                    "tutorial/gemm",
                    f"openai-compatible@{server.openai_base_url}::scripted",
                    str(run_dir),
                    plans=6,
                    sets=['hardware.mode="emulator"', "backend_options.seeds=2"],
                ),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while (
            time.monotonic() < deadline and proc.poll() is None
        ):  # kill after the root and one candidate
            if (run_dir / "run.sqlite").exists():
                store = RunStore(run_dir)
                done = store.count("evaluations")
                store.close()
                if done >= 2:
                    break
            time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        store = RunStore(run_dir)
        before_kill = {
            c.eval_key: store.evaluation(c.eval_key)
            for c in store.candidates()
            if c.eval_key and store.evaluation(c.eval_key)
        }
        store.close()
        resumed = subprocess.run(
            [*cli, "resume", str(run_dir), "--quiet", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.stop_thread()
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["stop_reason"] == "completed"
    # 6 plans + 6 codes in all; only calls in flight at the kill may be asked again
    assert server.request_count <= 12 + 4
    store = RunStore(run_dir)
    for key, result in before_kill.items():  # evaluations done before the kill are not redone
        assert store.evaluation(key) == result
    store.close()
    assert respond.verdicts(run_dir) == {
        "keep a block of lhsT resident and reuse each rhs tile": (True, "status: ok"),
        "skip the work and write zeros": (False, "status: wrong_answer"),
        "rewrite with a typo": (False, "status: compile_error"),
    }
    assert (run_dir / "best.py").read_text().strip() == optimized_source("tutorial/gemm").strip()


CURRENT_PROPOSALS = {
    "sum the squares inside the activation that squares them": (
        ADV / "honest" / "rmsnorm_current_fused.py"
    ).read_text(),
    "process 256 rows per tile": (ADV / "hacks" / "h27_current_partition_over_128.py").read_text(),
    "load the rows with the legacy nl.load": (ADV / "hacks" / "h28_mixed_api.py").read_text(),
}


def test_optimize_on_a_current_api_problem_keeps_the_honest_kernel_and_refuses_rule_violations(
    tmp_path,
):
    """tutorial/rmsnorm's baseline is a current-API (``import nki``) kernel, evaluated on the
    default generation: the run keeps the honest fused kernel and refuses a tile of 256
    partitions (a verification error since NKI 0.6) and a kernel mixing nki with neuronxcc.nki."""
    proposals = Proposals(CURRENT_PROPOSALS, fallback="process 256 rows per tile")
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
                    plans=6,
                    sets=['hardware.mode="emulator"', "backend_options.seeds=2"],
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
    assert "import nki\n" in RunStore(run_dir).candidates()[0].code
    assert proposals.verdicts(run_dir) == {
        "sum the squares inside the activation that squares them": (True, "status: ok"),
        "process 256 rows per tile": (False, "status: compile_error"),
        "load the rows with the legacy nl.load": (False, "status: rejected"),
    }
    best = (run_dir / "best.py").read_text().strip()
    assert (
        best == CURRENT_PROPOSALS["sum the squares inside the activation that squares them"].strip()
    )


SWIGLU_NKI = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def solution(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        for j in nl.affine_range(cols // 2048):
            x = nl.load(a[i * 128:(i + 1) * 128, j * 2048:(j + 1) * 2048])
            y = nl.load(b[i * 128:(i + 1) * 128, j * 2048:(j + 1) * 2048])
            nl.store(out[i * 128:(i + 1) * 128, j * 2048:(j + 1) * 2048], value=nl.multiply(nl.silu(x), y))
    return out
"""


def test_a_translation_run_turns_the_pytorch_source_into_an_nki_kernel(tmp_path):
    pytest.importorskip("torch")
    server = LLMTestServer(
        lambda request: (
            "translate the forward into one fused NKI kernel"
            if is_planning(request)
            else fenced(SWIGLU_NKI)
        )
    )
    server.start_in_thread()
    run_dir = tmp_path / "run"
    try:
        done = subprocess.run(
            [
                *preloaded_cli(),
                *optimize_args(
                    "trn",
                    "pytorch/swiglu",
                    f"openai-compatible@{server.openai_base_url}::scripted",
                    str(run_dir),
                    sets=[
                        "translation.iterations=1",
                        'hardware.mode="emulator"',
                        "backend_options.seeds=1",
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
    assert "translation" in server.requests[0].prompt.lower()
    assert (
        run_dir / "best.py"
    ).read_text().strip() == SWIGLU_NKI.strip()  # faster than the framework lowering


def test_a_step_result_is_read_only_as_a_regular_file_never_through_a_link(tmp_path):
    """What a tracing process leaves in its dir is the candidate's: the engine reads a regular
    file's bytes, and refuses a link (wherever it points) or a FIFO (never waited on)."""
    import os

    from autocomp_trn.evaluate import LeftBadly, read_result

    (tmp_path / "status.json").write_text('{"status": "ok"}')
    assert read_result(tmp_path, "status.json") == b'{"status": "ok"}'
    assert read_result(tmp_path, "trace.json") is None
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not the kernel's")
    os.symlink(secret, tmp_path / "trace.json")
    with pytest.raises(LeftBadly, match="symbolic link"):
        read_result(tmp_path, "trace.json")
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(LeftBadly, match="not a regular file"):
        read_result(tmp_path, "fifo.json")


def test_floor_division_and_modulo_of_an_index_stay_affine_or_are_refused():
    from autocomp_trn.emulator.indexing import IndexExpr, NkiError

    ip = IndexExpr.axis(128)
    flat = ip + 3 * 128  # rows 384..511 of a [2, 256] view
    assert (flat // 256).coeffs == (0,) and (flat // 256).const == 1
    assert (flat % 256).coeffs == (1,) and (flat % 256).const == 128
    assert ((ip * 4 + 2) // 2).coeffs == (2,) and ((ip * 4 + 2) // 2).const == 1
    with pytest.raises(NkiError, match="must be affine"):
        ip % 2  # wraps inside the tile: a gather, not an access pattern
    with pytest.raises(NkiError, match="must be affine"):
        (ip + 64) // 128


def test_a_stressed_problem_scales_only_its_last_seed():
    import numpy as np

    from autocomp_trn.problems.catalog import spec_by_id

    spec = spec_by_id("pytorch/softmax")
    one, two = spec.make_inputs([5]), spec.make_inputs([5, 6])
    assert np.array_equal(one[0][0], two[0][0])
    assert np.abs(two[0][1]).max() > 88  # exp overflows fp32 without the max subtraction


def test_a_trace_nested_past_the_parser_stack_is_the_kernels_failure():
    """The tracing process owns trace.json; nesting that exhausts the JSON parser's stack was
    an exception in the replay, reported as the evaluator's infra_error (retried for free)."""
    from autocomp_trn.judge import judge
    from autocomp_trn.problems.catalog import spec_by_id

    verdict = judge(spec_by_id("tutorial/rmsnorm"), "[" * 100_000 + "]" * 100_000, [1], "trn1")
    assert (verdict["status"], verdict["code"]) == ("rejected", "err_trace_tampered")
