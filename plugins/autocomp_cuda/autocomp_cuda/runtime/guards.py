"""The candidate worker's identity guards: the torch, time, threading and builtins functions
and the global numeric flags, snapshotted before the candidate is imported and compared
after import, after every correctness trial and after every timed call; and checksums of a
model's state around every call. A courtesy that names an attack early (see
``candidate_main``): the verdict never rests on them alone."""

from __future__ import annotations

import sys
from typing import Any

# Bound when the worker imports this module, before any candidate code exists in the process.
_id, _vars, _callable, _sorted = id, vars, callable, sorted

import torch  # noqa: E402

from . import common  # noqa: E402

_get_num_threads = torch.get_num_threads

GUARDED = [
    ("torch", "allclose"),
    ("torch", "equal"),
    ("torch", "isclose"),
    ("torch", "testing.assert_close"),
    ("torch", "Tensor.__eq__"),
    ("torch", "Tensor.clone"),
    ("torch", "Tensor.copy_"),
    ("torch", "save"),
    ("torch", "cuda.synchronize"),
    ("torch", "cuda.Event"),
    ("torch", "cuda.Event.record"),
    ("torch", "cuda.Event.elapsed_time"),
    ("torch", "cuda.Event.synchronize"),
    ("torch", "no_grad"),
    ("torch", "nn.Module.__call__"),
    ("torch", "manual_seed"),
    ("torch", "Tensor.__torch_function__"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "sleep"),
    ("builtins", "type"),
    ("builtins", "isinstance"),
]


def _resolve(module_name: str, dotted: str) -> Any:
    obj: Any = sys.modules.get(module_name) or __import__(module_name)
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


#: Namespaces whose every callable attribute is compared, by identity, with what it was
#: before the candidate was imported (after import, after every correctness trial and after
#: every timed call): a candidate that replaces one (slowing what it is compared with,
#: hiding work in what the harness calls between timed calls) is refused.
WATCHED = [
    ("torch", ""),
    ("torch", "Tensor"),
    ("torch", "_C.TensorBase"),
    ("torch", "nn.functional"),
    ("torch", "nn.Module"),
    ("torch", "cuda"),
    ("time", ""),
    ("threading", ""),
    ("builtins", ""),
]


def _watched_namespaces() -> list[tuple[str, Any]]:
    found = []
    for m, d in WATCHED:
        obj = sys.modules.get(m) or __import__(m)
        for part in d.split(".") if d else []:
            obj = getattr(obj, part, None)
        if obj is not None:
            found.append((f"{m}.{d}" if d else m, obj))
    return found


def snapshot_functions() -> dict[str, int]:
    # Bound methods (classmethods) are created anew on each access: compare what they wrap.
    ids = {
        f"{m}.{d}": _id(getattr(obj, "__func__", obj))
        for m, d in GUARDED
        for obj in [_resolve(m, d)]
    }
    # Attributes added later (a lazily imported submodule) are not a change; callables
    # replaced are. Plain values (version strings, flags) are left to snapshot_flags.
    for name, namespace in _watched_namespaces():
        if isinstance(namespace, type):
            # what the class resolves, inherited attributes included: one set on the class
            # (type.__setattr__) shadows the base's and changes what every call reaches
            resolved: dict[str, Any] = {}
            for klass in reversed(namespace.__mro__):
                resolved.update(_vars(klass))
            items = list(resolved.items())
        else:
            items = list(_vars(namespace).items())
        for key, value in items:
            if key != "_" and _callable(value):
                ids[f"{name}:{key}"] = _id(getattr(value, "__func__", value))
    return ids


def snapshot_flags() -> dict[str, Any]:
    flags: dict[str, Any] = {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cuda.matmul.allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "cuda.matmul.allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "cudnn.enabled": torch.backends.cudnn.enabled,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "default_dtype": str(torch.get_default_dtype()),
        "grad_enabled": torch.is_grad_enabled(),
        # CPU timing runs on one intra-op thread (see Worker.setup): a candidate that takes
        # more changes the conditions it is compared under
        "num_threads": _get_num_threads(),
    }
    return flags


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return _sorted(k for k in before if before[k] != after.get(k))


def state_checksums(model: torch.nn.Module) -> dict[str, list[float]]:
    sums = {f"param:{n}": common.checksum(p) for n, p in model.named_parameters()}
    sums.update({f"buffer:{n}": common.checksum(b) for n, b in model.named_buffers()})
    return sums
