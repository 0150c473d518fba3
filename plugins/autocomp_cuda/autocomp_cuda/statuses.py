"""Verdict statuses and the error texts that classify a dead worker (no torch: the engine reads these)."""

from __future__ import annotations

# Statuses kept distinct all the way to the report (see the plugin README).
OK = "ok"
COMPILE_ERROR = "compile_error"
LOAD_ERROR = "load_error"
RUNTIME_ERROR = "runtime_error"
CUDA_FAULT = "cuda_fault"
TIMEOUT = "timeout"
OOM = "oom"
MISMATCH = "mismatch"
HACK = "hack_suspected"
INFRA_ERROR = "infra_error"
STATUSES = (
    OK,
    COMPILE_ERROR,
    LOAD_ERROR,
    RUNTIME_ERROR,
    CUDA_FAULT,
    TIMEOUT,
    OOM,
    MISMATCH,
    HACK,
    INFRA_ERROR,
)

CUDA_FAULT_MARKERS = (
    "cuda error",
    "illegal memory access",
    "device-side assert",
    "an illegal instruction",
    "misaligned address",
    "unspecified launch failure",
    "cudaerror",
    "acceleratorerror",
)
OOM_MARKERS = (
    "out of memory",
    "can't allocate memory",
    "cannot allocate memory",
    "std::bad_alloc",
    "outofmemoryerror",
)
