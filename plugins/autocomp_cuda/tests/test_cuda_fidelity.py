"""KernelBench's published baseline timings as measured programs (``autocomp_cuda.fidelity``),
on a small KernelBench-shaped checkout written here: two level-1 problems, one level-2
problem, and timing folders in KernelBench's layout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from autocomp_core.fidelity import FidelityUnsupported
from autocomp_core.testing import preloaded_cli

from autocomp_cuda import fidelity
from autocomp_cuda.fidelity import choose_timing_set, gpu_class, read_timing_sets

CLI = preloaded_cli()

SCALE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, factor):
        super(Model, self).__init__()
        self.factor = factor

    def forward(self, x):
        return torch.tanh(x * self.factor)


rows = 64
cols = 128


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return [3.0]
"""

ROW_SUM = SCALE.replace("torch.tanh(x * self.factor)", "(x * self.factor).sum(dim=1)")

LINEAR_TANH = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.tanh(self.linear(x))


batch = 32
n_in = 64
n_out = 48


def get_inputs():
    return [torch.rand(batch, n_in)]


def get_init_inputs():
    return [n_in, n_out]
"""

H100 = "NVIDIA H100 80GB HBM3"


def entry(mean: float, hardware: str = H100) -> dict:
    return {"mean": mean, "std": 0.01, "min": mean, "max": mean, "num_trials": 100,
            "hardware": hardware, "device": "cuda:0"}  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "KernelBench-checkout"
    for level, name, text in [
        (1, "1_Scale_by_factor.py", SCALE),
        (1, "2_Row_sum_scaled.py", ROW_SUM),
        (1, "3_Not_timed.py", SCALE),  # a problem without a published time is not measured
        (2, "1_Linear_Tanh.py", LINEAR_TANH),
    ]:
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    timing = root / "results" / "timing"
    eager = {
        "level1": {
            "1_Scale_by_factor.py": entry(2.5),
            "2_Row_sum_scaled.py": entry(1.25, "NVIDIA H200"),  # KernelBench's Modal did this
        },
        "level2": {"1_Linear_Tanh.py": entry(4.0)},
    }
    compiled = {"level1": {"1_Scale_by_factor.py": entry(2.0)}, "level2": {}}
    for folder, files in {
        "H100_Fake": {fidelity.EAGER_FILE: eager, fidelity.COMPILED_FILE: compiled},
        "H100_PCIe_Fake": {fidelity.EAGER_FILE: _rename(eager, "NVIDIA H100 PCIe")},
        "L40S_fake": {fidelity.EAGER_FILE: _rename(eager, "NVIDIA L40S")},
    }.items():
        (timing / folder).mkdir(parents=True)
        for name, data in files.items():
            (timing / folder / name).write_text(json.dumps(data))
    return root


def _rename(data: dict, hardware: str) -> dict:
    return {
        level: {name: {**e, "hardware": hardware} for name, e in files.items()}
        for level, files in data.items()
    }


@pytest.mark.parametrize(
    "name,cls",
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 PCIe", "H100"),
        ("H100_PCIe_LambdaLabs", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA L40S", "L40S"),
        ("L40S_babel", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA RTX A6000", "A6000"),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti"),
        ("RTX_3090_Ti", "RTX 3090 Ti"),
        ("Tesla T4", "T4"),
        ("some accelerator", None),
    ],
)
def test_gpu_class_is_read_from_device_and_folder_names(name, cls):
    assert gpu_class(name) == cls


def test_timing_folders_are_read_with_their_gpu_from_the_entries(checkout):
    sets = {s.folder: s for s in read_timing_sets(checkout)}
    assert set(sets) == {"H100_Fake", "H100_PCIe_Fake", "L40S_fake"}
    fake = sets["H100_Fake"]
    assert (fake.gpu, fake.pcie, fake.hardware) == ("H100", False, H100)  # the majority's name
    assert fake.compiled["level1"]["1_Scale_by_factor.py"]["mean"] == 2.0
    assert (sets["H100_PCIe_Fake"].gpu, sets["H100_PCIe_Fake"].pcie) == ("H100", True)
    assert sets["L40S_fake"].compiled == {}


@pytest.mark.parametrize(
    "device,explicit,folder",
    [
        ("NVIDIA H100 80GB HBM3", "", "H100_Fake"),  # same class, same form factor
        ("NVIDIA H100 PCIe", "", "H100_PCIe_Fake"),
        ("NVIDIA H200", "", "H100_Fake"),  # no H200 published: the same architecture's
        ("NVIDIA L4", "", "L40S_fake"),
        ("NVIDIA H200", "L40S_fake", "L40S_fake"),  # named explicitly: a folder
        ("NVIDIA H200", "H100 PCIe", "H100_PCIe_Fake"),  # or a class
    ],
)
def test_the_nearest_published_gpu_class_is_chosen(checkout, device, explicit, folder):
    assert choose_timing_set(read_timing_sets(checkout), device, explicit).folder == folder


@pytest.mark.parametrize("device,explicit", [("NVIDIA A100-SXM4-80GB", ""), ("", "B200")])
def test_no_published_gpu_like_ours_is_refused_naming_what_is_published(checkout, device, explicit):
    with pytest.raises(FidelityUnsupported) as error:
        choose_timing_set(read_timing_sets(checkout), device, explicit)
    message = str(error.value)
    assert "\n" not in message and "H100_PCIe_Fake (NVIDIA H100 PCIe)" in message
    assert "fidelity_gpu_class" in message


def test_a_folder_without_timings_is_named_in_one_line(tmp_path):
    with pytest.raises(FidelityUnsupported, match=r"results/timing/\*/baseline_time_torch\.json"):
        read_timing_sets(tmp_path)


def cuda_backend(make_backend, **options):
    return make_backend("cuda", fidelity_gpu_class="H100_Fake", **options)


def test_each_timed_problem_is_its_own_model_measured_at_the_published_time(make_backend, checkout):
    backend = cuda_backend(make_backend)
    programs = backend.fidelity_programs(checkout)
    assert [(p.chain, p.step, p.name, p.measured, p.problem.id) for p in programs] == [
        ("kb/L1 eager", 0, "1_Scale_by_factor", 2.5, "kb/L1/1"),
        ("kb/L1 eager", 1, "2_Row_sum_scaled", 1.25, "kb/L1/2"),
        ("kb/L2 eager", 0, "1_Linear_Tanh", 4.0, "kb/L2/1"),
    ]
    first = programs[0]
    assert "class ModelNew(nn.Module)" in first.code and "super(ModelNew, self)" in first.code
    assert first.metric == ""  # our eager time: the candidate's own metric
    assert first.source == (
        "KernelBench/level1/1_Scale_by_factor.py (results/timing/H100_Fake/baseline_time_torch.json)"
    )
    assert "timed on NVIDIA H200" in programs[1].adapted and "timed on" not in first.adapted
    # evaluate finds the problems by id without kernelbench_path
    assert backend.spec("kb/L2/1").path.name == "1_Linear_Tanh.py"
    assert backend.load_problem("kb/L1/2").baseline_code == programs[1].code


def test_the_compiled_baseline_is_a_second_chain_where_published(make_backend, checkout):
    programs = cuda_backend(make_backend, compile_baseline=True).fidelity_programs(checkout)
    compiled = [p for p in programs if p.chain.endswith("torch.compile")]
    assert [(p.chain, p.name, p.measured, p.metric) for p in compiled] == [
        ("kb/L1 torch.compile", "1_Scale_by_factor", 2.0, "compiled_baseline_ms"),
    ]
    eager = next(p for p in programs if p.name == "1_Scale_by_factor" and p is not compiled[0])
    assert eager.code == compiled[0].code  # one evaluation serves both chains


def test_a_seeded_sample_per_level(make_backend, checkout):
    def names(seed):
        backend = cuda_backend(make_backend, fidelity_sample=1, fidelity_seed=seed)
        return [(p.chain, p.name) for p in backend.fidelity_programs(checkout)]

    drawn = {tuple(names(seed)) for seed in range(8)}
    assert all(len(d) == 2 and d[1] == ("kb/L2 eager", "1_Linear_Tanh") for d in drawn)
    assert {d[0][1] for d in drawn} == {"1_Scale_by_factor", "2_Row_sum_scaled"}
    assert names(3) == names(3)
    only_2 = cuda_backend(make_backend, fidelity_levels=(2,)).fidelity_programs(checkout)
    assert [p.chain for p in only_2] == ["kb/L2 eager"]


def test_the_cpu_device_is_refused_in_one_line(make_backend, checkout):
    with pytest.raises(
        FidelityUnsupported, match=r"^fidelity against published GPU timings needs a CUDA device"
    ):
        make_backend("cpu", fidelity_gpu_class="H100_Fake").fidelity_programs(checkout)


def test_the_command_on_the_cpu_device_exits_2_with_one_line(checkout):
    run = subprocess.run(
        [*CLI, "fidelity", "cuda", "--source", str(checkout)], capture_output=True, text=True
    )
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0] == f"error: {fidelity.CPU_REFUSAL}", run.stderr


def test_the_gpu_script_dry_run_lists_the_sample_it_would_run(checkout, tmp_path):
    """gpu_fidelity.sh with DRY_RUN=1: its command line and the programs the reader draws,
    nothing evaluated (so its flags and options are checked here, without a GPU)."""
    import os
    import sys

    script = Path(fidelity.__file__).parent.parent / "gpu_fidelity.sh"
    env = {**os.environ, "PYTHON": sys.executable, "DRY_RUN": "1", "SAMPLE": "1"}
    env["GPU_CLASS"] = "H100_PCIe_Fake"
    run = subprocess.run(
        ["bash", str(script), str(checkout), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "would run: autocomp-core fidelity cuda --source" in run.stdout
    assert "--option fidelity_sample=1" in run.stdout
    assert "published timings: H100_PCIe_Fake (NVIDIA H100 PCIe)" in run.stdout
    listed = [line.split()[:4] for line in run.stdout.splitlines() if line.startswith("kb/L")]
    assert [(c, k) for c, k, *_ in listed] == [("kb/L1", "eager"), ("kb/L2", "eager")]
    assert (tmp_path / "out" / "cuda_fidelity.txt").read_text() == run.stdout
