"""Test-run setup shared by the core's and every plugin's tests.

Under pytest-xdist (scripts/test.sh runs one worker per core) each worker gets its share of
the cores: the thread pools of the processes that tests start (torch, OpenMP, compilers
through MAX_JOBS) are sized to it, so N workers never start N x cores busy threads.
``shared_cache_dir`` gives every worker of one run the same directory for build caches
(compiled harnesses, extensions, references), so a build is done once per run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _cores_per_worker() -> int:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def pytest_configure(config: pytest.Config) -> None:
    share = str(_cores_per_worker())
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MAX_JOBS"):
        os.environ.setdefault(name, share)


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory):
    """shared_cache_dir(name): one directory per name for the whole run, all workers."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's base directory, above each worker's own

    def directory(name: str) -> Path:
        path = root / f"shared-{name}"
        path.mkdir(exist_ok=True)
        return path

    return directory
