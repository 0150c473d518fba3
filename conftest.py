"""Test-run setup shared by the core's and every plugin's tests.

Under pytest-xdist (scripts/test.sh runs one worker more than cores) each worker gets its
share of the cores (at least one): the thread pools of the processes that tests start (torch,
OpenMP, compilers through MAX_JOBS) are sized to it, so N workers never start N x cores busy
threads.
Ctrl-C is a normal SIGINT in the test processes even when the run was started as a shell's
background job (which starts with SIGINT ignored): the commands they start inherit it, and
tests send them SIGINT.
Tests marked ``gpu`` run only where a GPU answers (wherever the run starts: the whole suite or
one plugin's tests).
Files run longest first (scripts/test.sh hands pytest-xdist whole files, in the order
collected): ordered by how long each took in the last run (``.test-cache/durations.json``),
files never timed after those, by their number of tests. A long file that started near the end
would keep the run going after every other worker has finished.
Each test gets a playbook of its own (``AUTOCOMP_PLAYBOOK`` in its temporary folder): the runs
of one test may learn from each other, never from another test's or from the user's.
``shared_cache_dir`` gives every worker of one run the same directory for build caches
(compiled harnesses, extensions, references), so a build is done once per run, and keeps
those whose code is unchanged for the next run (``.test-cache/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest


def _cores_per_worker() -> int:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    share = str(_cores_per_worker())
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MAX_JOBS"):
        os.environ.setdefault(name, share)


def _gpu_present() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not _gpu_present():
        config.hook.pytest_deselected(items=gpu_items)
        items[:] = [item for item in items if not item.get_closest_marker("gpu")]
    _longest_files_first(items)


ROOT = Path(__file__).resolve().parent
#: where build caches that outlive a run are kept (``AUTOCOMP_TEST_CACHE=off``: none, every
#: run starts cold)
KEPT_CACHES = ROOT / ".test-cache"
#: seconds each test file took in the last run that ran it: {path from the root: seconds}
DURATIONS = KEPT_CACHES / "durations.json"


def _keep_caches() -> bool:
    return os.environ.get("AUTOCOMP_TEST_CACHE", "on") != "off"


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _recorded_durations() -> dict[str, float]:
    try:
        took = json.loads(DURATIONS.read_text()) if _keep_caches() else {}
    except (OSError, ValueError):
        return {}
    return took if isinstance(took, dict) else {}


def _longest_files_first(items: list[pytest.Item]) -> None:
    took = _recorded_durations()
    tests: dict[str, int] = {}
    for item in items:
        tests[_file_of(item.nodeid)] = tests.get(_file_of(item.nodeid), 0) + 1
    # stable: a file's tests stay together and in their order
    items.sort(
        key=lambda item: (-took.get(_file_of(item.nodeid), 0.0), -tests[_file_of(item.nodeid)])
    )


_took_this_run: dict[str, float] = {}


def _records_durations(config: pytest.Config) -> bool:
    """Only the main process of a parallel run records (it hears every worker's reports);
    a run of a few tests inside a test (a sandbox's, a generated plugin's) never does."""
    parallel = bool(getattr(config.option, "numprocesses", None))
    return parallel and _keep_caches() and not os.environ.get("PYTEST_XDIST_WORKER")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = _file_of(report.nodeid)
    _took_this_run[file] = _took_this_run.get(file, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _took_this_run or not _records_durations(session.config):
        return
    took = {f: s for f, s in _recorded_durations().items() if (ROOT / f).is_file()}
    took.update({f: round(s, 2) for f, s in _took_this_run.items()})
    partial = DURATIONS.with_suffix(f".{os.getpid()}.tmp")
    try:  # only an ordering hint: a run that cannot keep it loses nothing else
        KEPT_CACHES.mkdir(exist_ok=True)
        partial.write_text(json.dumps(dict(sorted(took.items())), indent=0))
        partial.replace(DURATIONS)
    except OSError:
        partial.unlink(missing_ok=True)


def _digest_of(sources: tuple[Path, ...]) -> str:
    """Every file among or under ``sources`` (names and contents) and the Python version."""
    digest = hashlib.sha256(sys.version.encode())
    for source in sorted(sources):
        for path in sorted(source.rglob("*")) if source.is_dir() else [source]:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(source.parent)).encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(autouse=True)
def own_playbook(tmp_path_factory, monkeypatch):
    """A playbook for this test alone (commands the test starts inherit it)."""
    folder = tmp_path_factory.mktemp("playbook")
    monkeypatch.setenv("AUTOCOMP_PLAYBOOK", str(folder / "playbook.sqlite"))


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory):
    """shared_cache_dir(name): one directory per name for the whole run, all workers.

    shared_cache_dir(name, sources): kept across runs while the code in ``sources`` (the
    folders and files whose code makes what it holds) is unchanged, so a second run finds its builds
    and references (a warm run); a change to that code starts a fresh one.

    shared_cache_dir(name, content_addressed=True): kept across runs whatever the code: for a
    tool's own cache that checks what it holds (uv's, keyed by each file's hash)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's base directory, above each worker's own
    keep = _keep_caches()

    def directory(
        name: str, sources: tuple[Path, ...] = (), content_addressed: bool = False
    ) -> Path:
        if keep and content_addressed:
            path = KEPT_CACHES / name
        elif keep and sources:
            path = KEPT_CACHES / f"{name}-{_digest_of(sources)}"
            for stale in KEPT_CACHES.glob(f"{name}-*"):  # made by code that has changed since
                if stale != path:
                    shutil.rmtree(stale, ignore_errors=True)
        else:
            path = root / f"shared-{name}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    return directory
