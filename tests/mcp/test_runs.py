"""The server's view of runs when their journal cannot be read yet: a journal being
created by a run of ours is a run starting, anything else one line naming the run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autocomp_core.errors import AutocompError
from autocomp_core.ledger.store import DB_NAME
from autocomp_core.mcp.runs import Runs


def test_a_journal_being_created_by_our_run_is_a_run_starting(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"not yet a database")
    runs = Runs()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    runs.processes[tmp_path.absolute()] = sleeper
    try:
        status = runs.status(str(tmp_path))
        assert status["state"] == "starting" and status["pid"] == sleeper.pid
        with pytest.raises(AutocompError, match="has not started yet"):
            runs.best(str(tmp_path))
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_unreadable_journal_is_one_line(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"not a database at all")
    with pytest.raises(AutocompError) as caught:
        Runs().status(str(tmp_path))
    assert str(caught.value).startswith(f"run {tmp_path}: its journal cannot be read: ")
    assert "\n" not in str(caught.value)


def test_a_folder_without_a_run_is_refused(tmp_path):
    with pytest.raises(AutocompError, match=r"^run: no run at .*\(no run.sqlite there\)$"):
        Runs().status(str(tmp_path))
