"""KernelBench's published baseline timings, read as measured programs (issue 31, item 4).

A KernelBench checkout publishes, per GPU it was timed on, the time of every problem's own
PyTorch program: ``results/timing/<GPU>_<where>/baseline_time_torch.json`` (eager) and, where
published, ``baseline_time_torch_compile_inductor_default.json`` (``torch.compile`` with its
defaults), each ``{"level1": {"19_ReLU.py": {"mean": ms, "std", "min", "max", "num_trials",
"hardware": "NVIDIA H100 80GB HBM3", "device"}, ...}, "level2": ...}``: wall clock, 3 warm-up
calls, 100 timed calls, float32 (the README of that folder). Those timings belong to the
problem files of the same commit (KernelBench scaled its problems up in 2025-07, v0.2, and
replaced its timing folders then): use the checkout's own files.

Each problem of the chosen levels that has a published time becomes a ``MeasuredProgram``
whose program is the problem's own ``Model`` (renamed ``ModelNew``, ``baseline_source``): the
"modelled" number is then our harness's time of the reference at full size on our GPU, and the
comparison says whether our timing ranks and scales problems as KernelBench's did on the
nearest GPU class. The chains are the levels (Spearman per level); with ``compile_baseline``
on, a second chain per level compares the ``torch.compile`` baseline our harness times beside
the same evaluation (``compiled_baseline_ms``) with the published inductor-default time.

The GPU class is chosen by name: the published folder whose GPU is the class of ours (the
device name torch reports), else one of the same architecture (an H200 is compared with an
H100), the form factor (PCIe or not) breaking ties; ``fidelity_gpu_class`` names a folder or
class explicitly. Nothing here runs on the CPU device: its times say nothing about a GPU's.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocomp_core import FidelityUnsupported, MeasuredProgram, Problem

from .importer import import_kernelbench
from .problemset import ProblemSpec, baseline_source

TIMING_DIR = "results/timing"
EAGER_FILE = "baseline_time_torch.json"
COMPILED_FILE = "baseline_time_torch_compile_inductor_default.json"
CPU_REFUSAL = (
    "fidelity against published GPU timings needs a CUDA device (--hw device=cuda on a GPU "
    "machine); times on the CPU device say nothing about a GPU's"
)

#: GPU class -> architecture, for the classes KernelBench has published timings of and their
#: neighbours; a class is matched as a whole word of a device or folder name.
GPU_ARCHITECTURES = {
    "B200": "Blackwell",
    "GH200": "Hopper",
    "H200": "Hopper",
    "H100": "Hopper",
    "H20": "Hopper",
    "L40S": "Ada",
    "L40": "Ada",
    "L4": "Ada",
    "RTX 4090": "Ada",
    "A100": "Ampere",
    "A10G": "Ampere",
    "A10": "Ampere",
    "A6000": "Ampere",
    "RTX 3090 Ti": "Ampere",
    "RTX 3090": "Ampere",
    "T4": "Turing",
    "V100": "Volta",
}


def gpu_class(name: str) -> str | None:
    """The GPU class a device or folder name names ("NVIDIA H100 80GB HBM3" -> "H100",
    "L40S_babel" -> "L40S"), the longest class that is a whole word of it; None if none."""
    text = " " + re.sub(r"[_\-]+", " ", name).upper() + " "
    found = [
        c
        for c in GPU_ARCHITECTURES
        if re.search(rf"(?<![A-Z0-9]){re.escape(c.upper())}(?![A-Z0-9])", text)
    ]
    return max(found, key=len) if found else None


def is_pcie(name: str) -> bool:
    return "PCIE" in name.upper()


@dataclass
class TimingSet:
    """One published timing folder."""

    folder: str  # e.g. "H100_Modal"
    gpu: str | None  # its GPU class, from the hardware its entries name (else the folder name)
    pcie: bool
    hardware: str  # the hardware most of its entries name
    eager: dict[str, dict[str, dict[str, Any]]]  # "level1" -> file name -> entry
    compiled: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.folder} ({self.hardware or self.gpu or 'unknown GPU'})"


def _read_json(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FidelityUnsupported(f"{path}: not a KernelBench timing file ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise FidelityUnsupported(f"{path}: not a KernelBench timing file (level -> file -> time)")
    return data


def read_timing_sets(source: Path) -> list[TimingSet]:
    """Every published timing folder of a KernelBench checkout (``results/timing/*``)."""
    root = Path(source).expanduser() / TIMING_DIR
    eager_files = sorted(root.glob(f"*/{EAGER_FILE}"))
    if not eager_files:
        raise FidelityUnsupported(
            f"{root}/*/{EAGER_FILE}: not found; --source must be a KernelBench checkout with "
            "its published baseline timings"
        )
    sets = []
    for path in eager_files:
        eager = _read_json(path)
        named = Counter(
            str(entry.get("hardware", ""))
            for level in eager.values()
            for entry in level.values()
            if isinstance(entry, dict) and entry.get("hardware")
        )
        hardware = named.most_common(1)[0][0] if named else ""
        folder = path.parent.name
        compiled_path = path.parent / COMPILED_FILE
        sets.append(
            TimingSet(
                folder=folder,
                gpu=gpu_class(hardware) or gpu_class(folder),
                pcie=is_pcie(hardware) or is_pcie(folder),
                hardware=hardware,
                eager=eager,
                compiled=_read_json(compiled_path) if compiled_path.is_file() else {},
            )
        )
    return sets


def choose_timing_set(sets: list[TimingSet], device_name: str, explicit: str = "") -> TimingSet:
    """The published folder to compare with: ``explicit`` (a folder or a GPU class) if given,
    else the one of our GPU's class, else one of its architecture; the form factor (PCIe or
    not) and then the folder name break ties. Raises ``FidelityUnsupported`` naming what is
    published when none fits."""
    published = ", ".join(s.label for s in sets)
    if explicit:
        wanted = gpu_class(explicit)
        matches = [s for s in sets if s.folder.lower() == explicit.lower()] or [
            s for s in sets if wanted is not None and s.gpu == wanted
        ]
        if not matches:
            raise FidelityUnsupported(
                f"fidelity_gpu_class={explicit!r}: no such published timing folder or GPU "
                f"class (published: {published})"
            )
        pcie = is_pcie(explicit)
        return min(matches, key=lambda s: (s.pcie != pcie, s.folder))
    ours = gpu_class(device_name)
    arch = GPU_ARCHITECTURES.get(ours or "")
    candidates = [
        (0 if s.gpu == ours else 1, s.pcie != is_pcie(device_name), s.folder, s)
        for s in sets
        if s.gpu is not None and (s.gpu == ours or GPU_ARCHITECTURES.get(s.gpu) == arch)
    ]
    if ours is None or not candidates:
        raise FidelityUnsupported(
            f"no published timings for a GPU like ours ({device_name or 'unknown'}"
            f"{', ' + arch if arch else ''}): published are {published}; choose one with "
            "--option fidelity_gpu_class=FOLDER"
        )
    return min(candidates, key=lambda c: c[:3])[3]


def device_name(gpu_index: int) -> str:
    """The name torch gives the GPU (asked in a child process: the engine's process does not
    initialise CUDA, which its forked workers could not then use)."""
    probe = "import sys, torch; print(torch.cuda.get_device_name(int(sys.argv[1])))"
    try:
        run = subprocess.run(
            [sys.executable, "-c", probe, str(gpu_index)],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FidelityUnsupported(f"cannot ask torch for GPU {gpu_index}'s name: {exc}") from None
    if run.returncode != 0 or not run.stdout.strip():
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise FidelityUnsupported(f"torch cannot name GPU {gpu_index}: {last}")
    return run.stdout.strip().splitlines()[-1]


def sample(specs: list[ProblemSpec], per_level: int, seed: int) -> dict[int, list[ProblemSpec]]:
    """The problems per level: all (``per_level`` 0), else ``per_level`` drawn with ``seed``
    (the same seed draws the same problems), in the order of their numbers."""
    by_level: dict[int, list[ProblemSpec]] = {}
    for spec in specs:
        by_level.setdefault(_level(spec.id), []).append(spec)
    rng = random.Random(seed)
    chosen = {}
    for level, members in sorted(by_level.items()):
        if 0 < per_level < len(members):
            members = rng.sample(members, per_level)
        chosen[level] = sorted(members, key=lambda s: _number(s.id))
    return chosen


def _number(problem_id: str) -> int:
    return int(problem_id.rsplit("/", 1)[1])


def _level(problem_id: str) -> int:
    return int(problem_id.split("/")[1].removeprefix("L"))  # kb/L{level}/{number}


def measured_programs(
    source: Path,
    timings: TimingSet,
    to_problem: Callable[[ProblemSpec], Problem],
    *,
    levels: tuple[int, ...] = (1, 2),
    per_level: int = 0,
    seed: int = 0,
    compiled: bool = False,
) -> list[MeasuredProgram]:
    """The checkout's problems of ``levels`` with a published time in ``timings`` (a seeded
    sample of ``per_level`` each, or all), each as its own ``Model``: chain ``kb/L{n} eager``
    and, with ``compiled``, ``kb/L{n} torch.compile`` (compared on ``compiled_baseline_ms``)."""
    try:
        specs = import_kernelbench(source, levels)
    except FileNotFoundError as exc:
        raise FidelityUnsupported(str(exc)) from None

    def timed(spec: ProblemSpec) -> bool:
        return spec.path.name in timings.eager.get(f"level{_level(spec.id)}", {})

    programs = []
    for level, chosen in sample([s for s in specs if timed(s)], per_level, seed).items():
        kinds = [("eager", timings.eager, "", EAGER_FILE)]
        if compiled:
            kinds.append(("torch.compile", timings.compiled, "compiled_baseline_ms", COMPILED_FILE))
        for kind, published, metric, file_name in kinds:
            step = 0
            for spec in chosen:
                entry = published.get(f"level{level}", {}).get(spec.path.name)
                if not isinstance(entry, dict) or not isinstance(entry.get("mean"), int | float):
                    continue
                adapted = "the problem's own Model, renamed ModelNew"
                hardware = str(entry.get("hardware", ""))
                if hardware and hardware != timings.hardware:
                    adapted += f"; this entry was timed on {hardware}, not {timings.hardware}"
                programs.append(
                    MeasuredProgram(
                        chain=f"kb/L{level} {kind}",
                        step=step,
                        name=spec.path.stem,
                        measured=float(entry["mean"]),
                        problem=to_problem(spec),
                        code=baseline_source(spec),
                        source=f"{spec.path.relative_to(Path(source).expanduser())} "
                        f"({TIMING_DIR}/{timings.folder}/{file_name})",
                        adapted=adapted,
                        metric=metric,
                    )
                )
                step += 1
    if not programs:
        raise FidelityUnsupported(
            f"{source}: no problem of levels {list(levels)} has a time in "
            f"{TIMING_DIR}/{timings.folder}/{EAGER_FILE}"
        )
    return programs
