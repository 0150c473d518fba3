"""The cache on disk: orphaned publish copies removed, least recently used entries pruned."""

from __future__ import annotations

import os
import subprocess
import time

from autocomp_cuda import cache
from autocomp_cuda.harness import Harness, Settings


def _entry(folder, name: str, size: int, used_ago_s: float):
    path = folder / name
    path.mkdir(parents=True)
    (path / "meta.json").write_bytes(b"x" * size)
    when = time.time() - used_ago_s
    os.utime(path, (when, when))
    return path


def test_a_harness_removes_the_publish_copies_of_processes_that_are_gone(tmp_path):
    proc = subprocess.Popen(["true"])
    proc.wait()  # its pid names no process now
    refs = tmp_path / "refs"
    crashed = _entry(refs, f"abc-gate.{proc.pid}.k2j4x8q1.tmp", 10, 5)  # a crash mid-publish
    ours = _entry(refs, f"def.{os.getpid()}.a1b2c3d4.tmp", 10, 5)  # a live process's copy
    stale = _entry(tmp_path / "builds", "0123.copy.tmp", 10, cache.ORPHAN_AGE_S + 60)
    kept = _entry(refs, "abc-gate", 10, 5)
    Harness(tmp_path, Settings())
    assert not crashed.exists() and not stale.exists()
    assert ours.exists() and kept.exists()


def test_prune_removes_the_least_recently_used_entries_until_the_rest_fits(tmp_path):
    refs = tmp_path / "refs"
    old = _entry(refs, "old", 4000, 3 * 3600)
    older = _entry(refs, "older", 4000, 4 * 3600)
    recent = _entry(refs, "recent", 4000, 2 * 3600)
    busy = _entry(refs, "busy", 4000, 10)  # inside the grace: someone may be reading it
    cache.touch(old)  # used again just now: no longer among the least recently used
    removed = cache.prune(refs, max_bytes=9000)
    assert removed == [older, recent]
    assert sorted(p.name for p in refs.iterdir()) == ["busy", "old"]
    # Past the bound but every entry recently used: nothing goes.
    assert cache.prune(refs, max_bytes=100) == []
    assert busy.exists() and old.exists()
