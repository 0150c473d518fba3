"""Helpers shared by the child processes: loading a reference, seeding, classifying errors."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import torch

from ..input_plan import NATIVE, variant_for
from ..statuses import (  # noqa: F401 - the children's names for them
    CUDA_FAULT,
    CUDA_FAULT_MARKERS,
    HACK,
    LOAD_ERROR,
    MISMATCH,
    OK,
    OOM,
    OOM_MARKERS,
    RUNTIME_ERROR,
)
from .off_distribution import transform_inputs

#: In a reference's dir: the buffers its forward updates, as its first trial left them.
BUFFERS_FILE = "buffers_0.pt"


def classify_exception(exc: BaseException, default: str = RUNTIME_ERROR) -> str:
    text = f"{type(exc).__name__}: {exc}".lower()
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or any(
        m in text for m in OOM_MARKERS
    ):
        return OOM
    if any(m in text for m in CUDA_FAULT_MARKERS):
        return CUDA_FAULT
    return default


#: Files whose frames a candidate's author wants to see.
OWN_FILES = ("candidate.py", "problem.py")


def short_traceback(exc: BaseException, limit: int = 4000) -> str:
    """The traceback as the candidate's author needs it: frames in the candidate's own files
    and the innermost one; the harness's and libraries' frames are elided (they say nothing
    about the candidate and differ between machines)."""
    frames = traceback.extract_tb(exc.__traceback__)
    lines, skipped = ["Traceback (most recent call last):\n"], 0
    for i, frame in enumerate(frames):
        own = os.path.basename(frame.filename) in OWN_FILES
        if own or i == len(frames) - 1:
            if own:  # the work dir's name is random: the same error reads the same every run
                frame.filename = os.path.basename(frame.filename)
            if skipped:
                lines.append(
                    f"  ... {skipped} harness or library frame{'s' if skipped > 1 else ''}\n"
                )
                skipped = 0
            lines.extend(traceback.format_list([frame]))
        else:
            skipped += 1
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines)[-limit:]


#: bound when the harness loads, before any candidate could rebind the name
_CPU_GENERATOR = torch.default_generator


def seed_all(seed: int, device: torch.device | None = None) -> None:
    """Python's, numpy's and torch's random state from ``seed``. On the CPU device only the
    CPU generator is seeded (the same stream as ``torch.manual_seed``): seeding every other
    backend costs ~0.3 ms, inside each timed call's window where the inputs are drawn."""
    random.seed(seed)
    if device is not None and device.type == "cpu":
        _CPU_GENERATOR.manual_seed(seed)
    else:
        torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass


def load_module(
    path: str | Path, name: str, overrides: dict[str, Any] | None = None
) -> types.ModuleType:
    """Import a source file as a fresh module (real file, so Triton can read kernel source).

    ``overrides`` set module constants (a size tier): each top-level assignment of an
    overridden name is followed by one of the new value, so constants computed from it
    further down (``bias_shape = (out_channels, 1, 1)``) follow; names the file does not
    assign at top level are set on the module afterwards."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if overrides:
        source = Path(path).read_text()
        code = compile(_with_overrides(ast.parse(source, str(path)), overrides), str(path), "exec")
        exec(code, module.__dict__)
    else:
        spec.loader.exec_module(module)
    # get_inputs() reads module globals at call time.
    for key, value in (overrides or {}).items():
        setattr(module, key, value)
    return module


def _with_overrides(tree: ast.Module, overrides: dict[str, Any]) -> ast.Module:
    body: list[ast.stmt] = []
    for node in tree.body:
        body.append(node)
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        names = [
            n.id
            for t in targets
            for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", []))
            if isinstance(n, ast.Name)
        ]  # a = b = 1 and D, H, W = 16, 32, 32 alike
        for name in names:
            if name in overrides:
                value = ast.parse(repr(overrides[name]), mode="eval").body
                body.append(
                    ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], value), node)
                )
    tree.body = body
    return ast.fix_missing_locations(tree)


def to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def to_double(value: Any) -> Any:
    """Promote floating tensors to float64; integer and bool tensors keep their dtype."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.double()
    if isinstance(value, (list, tuple)):
        return type(value)(to_double(v) for v in value)
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


def device_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "device": str(device),
        "cuda_runtime": torch.version.cuda,
        "threads": torch.get_num_threads(),
    }
    if device.type == "cuda" and torch.cuda.is_available():  # (a build needs no GPU)
        props = torch.cuda.get_device_properties(device)
        info.update(
            gpu=props.name,
            capability=f"{props.major}.{props.minor}",
            memory_gb=round(props.total_memory / 2**30, 1),
            l2_bytes=int(getattr(props, "L2_cache_size", 0)),
            sm_count=props.multi_processor_count,
        )
        info.update(driver_versions())
    return info


def driver_versions() -> dict[str, str | None]:
    """The NVIDIA kernel driver's version (e.g. 580.159.04, from the driver's own /proc file)
    and the CUDA version its driver API supports (e.g. 13.0, asked through torch)."""
    found: dict[str, str | None] = {"driver": None, "cuda_driver_api": None}
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text)
        found["driver"] = match.group(1) if match else None
    except OSError:
        pass
    try:
        api = int(torch._C._cuda_getDriverVersion())  # e.g. 13000
        found["cuda_driver_api"] = f"{api // 1000}.{api % 1000 // 10}"
    except Exception:
        pass
    return found


def make_inputs(
    module: types.ModuleType, seed: int, device: torch.device, variant: str = "native"
) -> list[Any]:
    """The problem's inputs for one seed, mapped off its own distribution by ``variant``
    (``input_plan``); identical in every process on the same device."""
    seed_all(seed, device)
    if device.type == "cuda":
        with torch.device(device):  # big inputs are drawn on the GPU, not on the host
            inputs = module.get_inputs()
    else:
        inputs = module.get_inputs()
    return transform_inputs([to_device(x, device) for x in inputs], variant, seed)


def trial_variant(job: dict[str, Any], k: int) -> str:
    """The input variant of a job's correctness trial ``k``, as its reference ran it."""
    planned = job.get("input_variants") or []
    return planned[k] if k < len(planned) else NATIVE


def timed_variant(job: dict[str, Any], seed: int) -> str:
    """A timed call's input variant, from its seed: the same in every worker given the seed."""
    return variant_for(seed, job.get("timed_variants") or [NATIVE])


def checksum(t: torch.Tensor) -> list[float]:
    """Three sums that any write changes with overwhelming probability."""
    if t.numel() == 0:
        return [0.0, 0.0, 0.0]
    v = t.detach().reshape(-1).to(torch.float64)
    pos = torch.arange(1, v.numel() + 1, device=v.device, dtype=torch.float64).remainder_(9973)
    return [float(v.nansum()), float((v * v).nansum()), float((v * pos).nansum())]


def input_checksums(inputs: list[Any]) -> list[list[float] | None]:
    return [checksum(x) if isinstance(x, torch.Tensor) else None for x in inputs]
