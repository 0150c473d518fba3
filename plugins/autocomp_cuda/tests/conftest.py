"""Shared fixtures: one build/reference cache per test session."""
from __future__ import annotations

from pathlib import Path

import pytest

from autocomp_cuda.backend import CudaBackend


@pytest.fixture(scope="session")
def cuda_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cuda-cache")


@pytest.fixture(scope="session")
def make_backend(cuda_cache):
    def make(device: str = "cpu", **options) -> CudaBackend:
        opts = {"cache_dir": str(cuda_cache), "reps": 8, "warmup": 2, "include_controls": True, **options}
        return CudaBackend(hardware={"device": device}, options=opts)
    return make
