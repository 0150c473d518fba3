"""Neuron mode without a Trainium machine: detection with nothing present, the commands and
environments built, the SDK output parsed, the drift canary judged on device results made here,
and the evaluator's flow through a stand-in harness (the real harness with its device call
replaced). Running on a NeuronCore is unverified here (see the README)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autocomp_trn import canary, neuron
from autocomp_trn.backend import TrnBackend
from autocomp_trn.judge import emulate


def test_detection_finds_nothing_here_and_auto_mode_falls_back_to_the_emulator(tmp_path):
    env = neuron.detect("trn1", dev_glob=str(tmp_path / "neuron*"))
    assert env.devices == [] and env.cores == 0 and not env.usable
    assert TrnBackend({"mode": "auto"}).mode in ("emulator", "neuron")
    assert TrnBackend({"mode": "emulator"}).mode == "emulator"


def test_detection_counts_cores_per_device(tmp_path):
    for name in ("neuron0", "neuron1", "neuron_log"):
        (tmp_path / name).touch()
    assert neuron.detect("trn2", dev_glob=str(tmp_path / "neuron*")).cores == 16
    assert neuron.detect("trn3", dev_glob=str(tmp_path / "neuron*")).cores == 16
    assert neuron.detect("trn1", dev_glob=str(tmp_path / "neuron*")).cores == 4


def test_no_legacy_front_end_is_seen_where_neuronxcc_nki_cannot_be_imported():
    env = neuron.detect("trn2")
    assert env.v1 == neuron.importable("neuronxcc.nki") and not neuron.importable("no_such.nki")


def test_the_nrtpy_python_is_this_one_or_the_one_named(tmp_path):
    if neuron.importable("nrtpy"):
        assert neuron.nrtpy_python({}) == sys.executable
        return
    assert neuron.nrtpy_python({}) is None
    assert neuron.nrtpy_python({neuron.NRTPY_PYTHON_ENV: sys.executable}) == sys.executable
    (tmp_path / "python").write_text("")  # not executable
    assert neuron.nrtpy_python({neuron.NRTPY_PYTHON_ENV: str(tmp_path / "python")}) is None


def test_the_api_generation_is_read_from_the_imports():
    assert neuron.api_version("import neuronxcc.nki.language as nl\n") == "v1"
    assert neuron.api_version("from neuronxcc import nki\n") == "v1"
    assert neuron.api_version("import nki\nimport nki.language as nl\n") == "v2"
    assert neuron.api_version("import nki\nimport neuronxcc.nki.language as nl\n") == "mixed"
    assert neuron.api_version("from nki.compiler import CompileConfig\n") == "v2"


def test_commands_pin_one_core_and_profile_one_execution():
    assert neuron.core_env(3) == {
        "NEURON_RT_VISIBLE_CORES": "3",
        "NEURON_RT_NUM_CORES": "1",
        "NEURON_LOGICAL_NC_CONFIG": "1",
    }
    assert neuron.harness_command("/py", Path("/w/request.json")) == [
        "/py",
        "-m",
        "autocomp_trn.runtime.neuron_main",
        "/w/request.json",
    ]
    capture, view = neuron.profile_commands("neuron-profile", Path("/w/k.neff"), Path("/w/p.ntff"))
    assert capture == [
        "neuron-profile",
        "capture",
        "-n",
        "/w/k.neff",
        "-s",
        "/w/p.ntff",
        "--num-exec",
        "20",
        "--profile-nth-exec",
        "10",
    ]
    assert view == [
        "neuron-profile",
        "view",
        "-n",
        "/w/k.neff",
        "-s",
        "/w/p_exec_10.ntff",
        "--output-format",
        "summary-json",
    ]


def test_parsing_the_sdk_outputs():
    assert neuron.parse_profile_summary(
        json.dumps({"k": {"total_time": 0.000123, "mfu": 0.5}})
    ) == pytest.approx(123.0)
    assert neuron.parse_latency_ms("compiling...\nLatency: 6.960 ms (P99)\n") == pytest.approx(6.96)
    # conv2d's upstream harness prints P50 first: the P99 value is the one taken
    assert neuron.parse_latency_ms(
        "P50 Latency: 1.000 ms\nP99 Latency: 1.250 ms\n"
    ) == pytest.approx(1.25)
    assert neuron.parse_latency_ms("no timing here") is None
    result = neuron.parse_result(
        'noise\nAUTOCOMP_TRN_RESULT {"status": "ok", "latency_us": 12.5}\n'
    )
    assert result == {"status": "ok", "latency_us": 12.5}


def test_the_request_names_the_api_the_seeds_and_the_benchmark():
    from autocomp_trn.problems.catalog import spec_by_id

    env = neuron.NeuronEnv(devices=["/dev/neuron0"], cores=2, v1=True, v2=False, profiler=None)
    ev = neuron.NeuronEvaluator(env, "trn1", seeds=3, timeout_s=60, warmup=2, iters=10)
    spec = spec_by_id("tutorial/rmsnorm@legacy")
    req = ev.request(spec, spec.baseline_code(), seed=1)
    assert (
        req["api"] == "v1" and len(req["seeds"]) == 3 and (req["warmup"], req["iters"]) == (2, 10)
    )
    assert req["generation"] == "trn1" and not req["canary"]
    assert ev.cores == [0, 1]
    known = ev.request(canary.CANARY_SPEC, canary.CANARY_SOURCE["v2"], seed=1, canary=True)
    assert known["canary"] and known["seeds"] == canary.CANARY_SEEDS and known["api"] == "v2"


def test_a_constant_output_never_passes_unless_the_reference_is_constant():
    import numpy as np

    from autocomp_trn.check import compare

    ref = [np.arange(6.0).reshape(1, 2, 3)]
    assert not compare([np.zeros((1, 2, 3))], ref, 1e9, 1e9).ok  # even with a huge tolerance
    assert compare([np.full((1, 2, 3), 5.0)], [np.full((1, 2, 3), 5.0)], 1e-6, 1e-6).ok


# ---------------------------------------------------------------- the current SDK's paths


def test_the_harness_environment_keeps_the_neuron_settings_and_sets_target_and_artifacts():
    outer = {
        "NEURON_CC_FLAGS": "--auto-cast=none",
        "NKI_PRECISE_FP": "1",
        "LD_LIBRARY_PATH": "/opt/aws/neuron/lib",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "x",
        "NEURON_RT_VISIBLE_CORES": "0-7",  # the core pin wins over the outer value
    }
    env = neuron.harness_env(5, "trn3", Path("/w"), outer)
    assert env["NEURON_CC_FLAGS"] == "--auto-cast=none" and env["NKI_PRECISE_FP"] == "1"
    assert env["LD_LIBRARY_PATH"] == "/opt/aws/neuron/lib"
    assert "HOME" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["NEURON_RT_VISIBLE_CORES"] == "5" and env["NEURON_LOGICAL_NC_CONFIG"] == "1"
    assert env["NEURON_PLATFORM_TARGET_OVERRIDE"] == "trn3"
    assert env["NKI_ARTIFACTS_DIR"] == "/w/artifacts"


def test_nrtpy_timing_command_percentile_and_the_neff_left_by_the_compile(tmp_path):
    cmd = neuron.nrtpy_command("/nrtpy/python", Path("/w/k.neff"), Path("/w/in.npz"), 2, 10)
    assert cmd[0] == "/nrtpy/python" and cmd[1].endswith("runtime/nrtpy_bench.py")
    assert Path(cmd[1]).is_file() and cmd[2:] == ["/w/k.neff", "/w/in.npz", "2", "10"]
    assert neuron.p99_us([float(i) for i in range(1, 101)]) == pytest.approx(99010.0)
    assert neuron.p99_us([0.0032] * 5) == pytest.approx(3.2)
    with pytest.raises(ValueError, match="no timed iteration"):
        neuron.p99_us([])
    with pytest.raises(FileNotFoundError, match="no NEFF"):
        neuron.find_neff(tmp_path)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "kernel.neff").write_bytes(b"neff")
    assert neuron.find_neff(tmp_path).name == "kernel.neff"


def test_the_nrtpy_python_gets_no_python_path_from_this_one():
    env = neuron.nrtpy_env({"PYTHONPATH": "/x", "PYTHONHOME": "/y", "NEURON_RT_VISIBLE_CORES": "3"})
    assert env == {"NEURON_RT_VISIBLE_CORES": "3"}


def test_bf16_inputs_travel_to_nrtpy_as_their_bytes():
    import ml_dtypes

    from autocomp_trn.runtime.neuron_main import _as_bytes

    x = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    assert _as_bytes(x).dtype == np.uint16 and _as_bytes(x).tobytes() == x.tobytes()
    y = np.ones(3, np.float32)
    assert _as_bytes(y) is y


# ---------------------------------------------------------------- the drift canary


@pytest.mark.parametrize(("api", "generation"), [("v2", "trn2"), ("v2", "trn3"), ("v1", "trn1")])
def test_the_canary_kernels_are_right_on_the_emulator(api, generation):
    result = emulate(canary.CANARY_SPEC, canary.CANARY_SOURCE[api], canary.CANARY_SEEDS, generation)
    assert result["status"] == "ok", result.get("message")


def _canary_case(scale_add=None, matmul=None):
    """The device's result for the canary's inputs (each output right unless given), judged."""
    a, b = canary.CANARY_SPEC.make_inputs(canary.CANARY_SEEDS)
    refs = [
        np.stack(r) for r in zip(*[canary.CANARY_SPEC.reference(a[s], b[s]) for s in range(len(a))])
    ]
    outs = [
        (scale_add(a, b) if scale_add else refs[0]).astype(np.float32),
        (matmul(refs[1]) if matmul else refs[1]).astype(np.float32),
    ]
    return canary.canary_failure(outs, refs)


def test_the_canary_passes_the_right_result_and_names_each_wrong_one():
    assert _canary_case() is None
    assert _canary_case(lambda a, b: np.zeros_like(a)) == "output 0 is all zeros"
    assert _canary_case(lambda a, b: np.full_like(a, 7.0)) == "output 0 is the constant 7"
    off = _canary_case(lambda a, b: 2 * a + b + 1e-3)
    assert off is not None and "differs from the reference" in off
    assert "NaN" in _canary_case(lambda a, b: np.where(a > 2, np.nan, 2 * a + b))
    assert "shape" in _canary_case(lambda a, b: (2 * a + b)[:, :64])
    # the matmul's PSUM result: zeros, or accumulated twice (a changed accumulate default)
    assert _canary_case(matmul=np.zeros_like) == "output 1 is all zeros"
    assert "output 1 differs" in _canary_case(matmul=lambda ref: 2 * ref)
    verdict = canary.canary_verdict("output 0 is all zeros")
    assert verdict.status == "infra_error" and verdict.message == (
        "the Neuron SDK returned a wrong result for a known kernel (drift canary): "
        "output 0 is all zeros"
    )


STAND_IN = """
import json
import sys
from pathlib import Path

import numpy as np

from autocomp_trn.emulator import modules
from autocomp_trn.canary import CANARY_SPEC
from autocomp_trn.problems.catalog import spec_by_id
from autocomp_trn.runtime import neuron_main

MODE = {mode!r}
modules.install()  # the kernel file imports nki: the emulator's stand-in loads it


def device(kernel, api, work):
    req = json.loads((work / "request.json").read_text())
    spec = CANARY_SPEC if req["canary"] else spec_by_id(req["problem"])

    def run(*arrays, **kwargs):
        if MODE == "zeros":
            return tuple(np.zeros(shape, np.float32) for shape, _ in spec.outputs)
        ref = spec.reference(*[x.astype(np.float64) for x in arrays], **spec.kwargs)
        return tuple(r.astype(np.float32) for r in ref)

    return run


neuron_main.device_runner = device
neuron_main.latency_us = lambda *args: 12.5
sys.exit(neuron_main.main([sys.argv[0], sys.argv[1]]))
"""

CANDIDATE = textwrap.dedent(
    """
    import nki
    import nki.language as nl


    @nki.jit
    def solution(a, g):
        return nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    """
)


def _evaluations(monkeypatch, mode: str, count: int):
    """``count`` evaluations through the real harness, its device call replaced by one that
    returns zeros (a drifted SDK) or the reference (a sound one); and how often it ran."""
    from autocomp_trn.problems.catalog import spec_by_id

    calls = []

    def command(python, request):  # the stand-in goes where the sandbox lets it be read
        calls.append(json.loads(Path(request).read_text())["canary"])
        script = Path(request).parent / "stand_in.py"
        script.write_text(STAND_IN.format(mode=mode))
        return [python, str(script), str(request)]

    monkeypatch.setattr(neuron, "harness_command", command)
    env = neuron.NeuronEnv(devices=["/dev/neuron0"], cores=1, v1=False, v2=True, profiler=None)
    ev = neuron.NeuronEvaluator(env, "trn2", seeds=2, timeout_s=120, warmup=1, iters=2)
    spec = spec_by_id("tutorial/rmsnorm")

    async def go():
        return [await ev.evaluate(spec, CANDIDATE, seed=s) for s in range(count)]

    return asyncio.run(go()), calls


def test_a_drifted_sdk_makes_every_evaluation_an_infra_error_and_no_candidate_runs(monkeypatch):
    verdicts, calls = _evaluations(monkeypatch, "zeros", 2)
    assert calls == [True]  # the canary alone ran, once
    for v in verdicts:
        assert v.status == "infra_error"
        assert v.message.startswith(canary.CANARY_MESSAGE) and "all zeros" in v.message


def test_a_sound_sdk_runs_the_canary_once_then_the_candidates(monkeypatch):
    verdicts, calls = _evaluations(monkeypatch, "right", 2)
    assert calls == [True, False, False]
    assert [(v.status, v.latency_us) for v in verdicts] == [("ok", 12.5), ("ok", 12.5)]


def test_the_backend_reports_a_canary_failure_as_the_evaluators_not_the_candidates():
    """The backend raises on infra_error: the engine records an infrastructure failure, never
    a verdict on the program."""
    from autocomp_core import EvalContext

    verdict = canary.canary_verdict("output 0 is all zeros")

    class Drifted:
        async def evaluate(self, *args, **kwargs):
            return verdict

    backend = TrnBackend({"mode": "neuron"})
    backend.__dict__["neuron_evaluator"] = Drifted()
    problem = backend.load_problem("tutorial/rmsnorm")
    with pytest.raises(RuntimeError, match="drift canary"):
        asyncio.run(backend.evaluate(problem, CANDIDATE, EvalContext(seed=0)))


def test_mixed_and_missing_apis_are_refused_before_anything_runs(monkeypatch):
    from autocomp_trn.problems.catalog import spec_by_id

    monkeypatch.setattr(neuron, "harness_command", lambda *a: pytest.fail("nothing may run"))
    spec = spec_by_id("tutorial/rmsnorm")
    current = neuron.NeuronEnv(devices=["/dev/neuron0"], cores=1, v1=False, v2=True, profiler=None)
    ev = neuron.NeuronEvaluator(current, "trn2", seeds=1, timeout_s=60, warmup=1, iters=1)
    mixed = asyncio.run(ev.evaluate(spec, "import nki\nimport neuronxcc.nki as old\n"))
    assert (mixed.status, mixed.code) == ("compile_error", "err_mixed_api")
    legacy = asyncio.run(ev.evaluate(spec, "import neuronxcc.nki as nki\n"))
    assert legacy.status == "compile_error" and "removed in NKI 0.8" in legacy.message
    old = neuron.NeuronEnv(devices=["/dev/neuron0"], cores=1, v1=True, v2=False, profiler=None)
    ev = neuron.NeuronEvaluator(old, "trn1", seeds=1, timeout_s=60, warmup=1, iters=1)
    assert asyncio.run(ev.evaluate(spec, CANDIDATE)).code == "err_no_current_api"


def test_the_harness_runs_the_kernels_own_jit_object_so_its_compile_config_goes_as_written(
    tmp_path,
):
    """With the emulator's stand-in ``nki`` (the real one is not here): a jit kernel is called
    as it is, carrying its CompileConfig; a plain function gets ``nki.jit`` with the defaults."""
    from autocomp_trn.emulator import modules
    from autocomp_trn.runtime.neuron_main import device_runner, load_kernel

    (tmp_path / "kernel.py").write_text(
        textwrap.dedent(
            """
            import nki
            from nki.compiler import Allocation, CompileConfig


            @nki.jit(compile_config=CompileConfig(allocation=Allocation.LINEAR, scheduling=True))
            def tuned(a):
                return a


            def plain(a):
                return a
            """
        )
    )
    with modules.installed("trn2"):
        tuned = load_kernel(tmp_path / "kernel.py", "tuned")
        assert device_runner(tuned, "v2", tmp_path) is tuned
        assert tuned.compile_config.scheduling is True
        plain = load_kernel(tmp_path / "kernel.py", "plain")
        wrapped = device_runner(plain, "v2", tmp_path)
        assert wrapped is not plain and type(wrapped) is type(tuned)
        assert wrapped.compile_config is None
