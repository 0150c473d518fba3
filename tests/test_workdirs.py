"""Work dirs that a killed engine leaves behind are removed by the next one, and nothing else
is: not a dir in use, not a fresh one, not a kept one, not what a symlink points at."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from autocomp_core.sandbox.workdirs import SUFFIX, HeldDir, remove_tree, sweep_abandoned

HOUR_AGO = time.time() - 3600


@pytest.fixture
def folder():
    """A temp dir as the engine's temp dir: under /tmp and open to the sandbox's uid."""
    path = Path(tempfile.mkdtemp(prefix="workdirs-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    remove_tree(path)


def age(path: Path) -> None:
    os.utime(path, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)


def test_the_work_dir_of_an_engine_killed_mid_run_is_swept_by_the_next_one(folder) -> None:
    engine = textwrap.dedent(
        """
        import asyncio, sys
        from autocomp_core.sandbox import SandboxLimits, run_sandboxed
        argv = [sys.executable, "-c", "open('started', 'w').close(); import time; time.sleep(60)"]
        asyncio.run(run_sandboxed(argv, limits=SandboxLimits(wall_s=60)))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", engine], env={**os.environ, "TMPDIR": str(folder)}
    )
    try:
        deadline = time.monotonic() + 30
        while not (found := list(folder.glob(f"autocomp-sbx-*{SUFFIX}/started"))):
            assert time.monotonic() < deadline and proc.poll() is None, "the program never ran"
            time.sleep(0.05)
        workdir = found[0].parent
        age(workdir)
        assert sweep_abandoned(folder, stale_s=0) == []  # its engine lives: held
        assert workdir.is_dir()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert workdir.is_dir()  # a killed engine removes nothing ...
    os.utime(workdir)
    assert sweep_abandoned(folder) == [] and workdir.is_dir()  # ... a recent dir stays ...
    age(workdir)
    assert sweep_abandoned(folder) == [workdir]  # ... and an old one nobody holds goes
    assert not workdir.exists()


def test_a_dir_in_use_is_never_swept_however_old(folder, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (gettempdir caches)
    held = HeldDir("autocomp-test-")
    (held.path / "data").write_text("in use")
    age(held.path)
    assert held.path.parent == folder
    assert sweep_abandoned(folder, stale_s=0) == []
    assert (held.path / "data").read_text() == "in use"
    held.release(remove=False)
    assert sweep_abandoned(folder, stale_s=0) == [held.path]


def test_only_work_dirs_are_swept_and_no_symlink_is_followed(folder) -> None:
    outside = folder / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    alias = folder / f"autocomp-alias{SUFFIX}"  # a symlink named like a work dir
    alias.symlink_to(outside)
    planted = folder / f"autocomp-planted{SUFFIX}"  # a work dir holding a symlink out
    planted.mkdir()
    (planted / "link").symlink_to(outside)
    (planted / "sub").mkdir()
    (planted / "sub").chmod(0o500)
    other = folder / "autocomp-sbx-kept"  # a kept dir (no suffix) and other dirs stay
    other.mkdir()
    for path in (alias, planted, other, outside):
        age(path)
    assert sweep_abandoned(folder, stale_s=0) == [planted]
    assert (outside / "precious").read_text() == "keep me"
    assert alias.is_symlink() and other.is_dir()


def test_removing_a_missing_dir_or_a_symlink_changes_no_permission(folder) -> None:
    """A work dir released twice, or one replaced by a symlink: nothing is chmod-ed, neither the
    parent (the temp dir itself) nor what the link points at."""
    target = folder / "target"
    target.mkdir(mode=0o755)
    link = folder / "link"
    link.symlink_to(target)
    remove_tree(folder / "gone")
    remove_tree(link)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    held = HeldDir("autocomp-test-")
    held.release()
    held.release()  # once only: the second does nothing
    assert not held.path.exists()
