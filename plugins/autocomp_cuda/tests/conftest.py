"""Shared fixtures: one build/reference cache per test session."""

from __future__ import annotations

import os
from pathlib import Path

import autocomp_core
import pytest

import autocomp_cuda
from autocomp_cuda.backend import CudaBackend


@pytest.fixture(scope="session")
def cuda_cache(shared_cache_dir) -> Path:
    # gpu_check.sh builds the GPU candidates in parallel into $AUTOCOMP_CUDA_CACHE first.
    if os.environ.get("AUTOCOMP_CUDA_CACHE"):
        return Path(os.environ["AUTOCOMP_CUDA_CACHE"])
    # shared by the xdist workers, and kept for the next run while the code that makes
    # references and builds (this plugin, the core but for its test helpers) is unchanged
    core = Path(autocomp_core.__file__).parent
    return shared_cache_dir(
        "cuda",
        (Path(autocomp_cuda.__file__).parent, *(p for p in core.iterdir() if p.name != "testing")),
    )


@pytest.fixture(scope="session")
def make_backend(cuda_cache):
    def make(device: str = "cpu", **options) -> CudaBackend:
        opts = {
            "cache_dir": str(cuda_cache),
            "reps": 8,
            "warmup": 2,
            "include_controls": True,
            **options,
        }
        return CudaBackend(hardware={"device": device}, options=opts)

    return make
