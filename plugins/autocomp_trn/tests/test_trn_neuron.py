"""Neuron mode without a Trainium machine: detection with nothing present, the commands built and
the SDK output parsed. Running on a NeuronCore is unverified here (see the README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocomp_trn import neuron
from autocomp_trn.backend import TrnBackend


def test_detection_finds_nothing_here_and_auto_mode_falls_back_to_the_emulator(tmp_path):
    env = neuron.detect("trn1", dev_glob=str(tmp_path / "neuron*"))
    assert env.devices == [] and env.cores == 0 and not env.usable
    assert TrnBackend({"mode": "auto"}).mode in ("emulator", "neuron")
    assert TrnBackend({"mode": "emulator"}).mode == "emulator"


def test_detection_counts_cores_per_device(tmp_path):
    for name in ("neuron0", "neuron1", "neuron_log"):
        (tmp_path / name).touch()
    assert neuron.detect("trn2", dev_glob=str(tmp_path / "neuron*")).cores == 16
    assert neuron.detect("trn1", dev_glob=str(tmp_path / "neuron*")).cores == 4


def test_the_api_generation_is_read_from_the_imports():
    assert neuron.api_version("import neuronxcc.nki.language as nl\n") == "v1"
    assert neuron.api_version("from neuronxcc import nki\n") == "v1"
    assert neuron.api_version("import nki\nimport nki.language as nl\n") == "v2"


def test_commands_pin_one_core_and_profile_one_execution():
    assert neuron.core_env(3) == {"NEURON_RT_VISIBLE_CORES": "3", "NEURON_RT_NUM_CORES": "1"}
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
    spec = spec_by_id("tutorial/rmsnorm")
    req = ev.request(spec, spec.baseline_code(), seed=1)
    assert (
        req["api"] == "v1" and len(req["seeds"]) == 3 and (req["warmup"], req["iters"]) == (2, 10)
    )
    assert ev.cores == [0, 1]


def test_a_constant_output_never_passes_unless_the_reference_is_constant():
    import numpy as np

    from autocomp_trn.check import compare

    ref = [np.arange(6.0).reshape(1, 2, 3)]
    assert not compare([np.zeros((1, 2, 3))], ref, 1e9, 1e9).ok  # even with a huge tolerance
    assert compare([np.full((1, 2, 3), 5.0)], [np.full((1, 2, 3), 5.0)], 1e-6, 1e-6).ok
