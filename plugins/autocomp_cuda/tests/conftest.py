"""Shared fixtures: one build/reference cache per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autocomp_cuda.backend import CudaBackend


@pytest.fixture(scope="session")
def cuda_cache(shared_cache_dir) -> Path:
    # gpu_check.sh builds the GPU candidates in parallel into $AUTOCOMP_CUDA_CACHE first.
    if os.environ.get("AUTOCOMP_CUDA_CACHE"):
        return Path(os.environ["AUTOCOMP_CUDA_CACHE"])
    return shared_cache_dir("cuda")  # one per run, shared by the xdist workers


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
