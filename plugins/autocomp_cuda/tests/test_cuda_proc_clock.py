"""The engine's CPU clock of a worker's sandbox: every process and thread in it is counted."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from autocomp_cuda import proc_clock

pytestmark = pytest.mark.skipif(not proc_clock.available(), reason="no process CPU clocks here")

# A parent that waits on stdin; each line tells it to burn CPU in a thread ("thread N"), in a
# child it forks and reaps ("child N"), or in a child it leaves running ("orphan N"), for
# about N ms, then to answer "done" (and the caller reads the tree's CPU).
_WORKER = r"""
import os, sys, threading, time

def burn(ms):
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass

for line in sys.stdin:
    kind, ms = line.split()
    ms = float(ms)
    if kind == "thread":
        t = threading.Thread(target=burn, args=(ms,)); t.start(); t.join()
    elif kind == "child":
        pid = os.fork()
        if pid == 0:
            burn(ms); os._exit(0)
        os.waitpid(pid, 0)
    elif kind == "orphan":
        r, w = os.pipe()
        if os.fork() == 0:
            burn(ms); os.write(w, b"x"); time.sleep(30); os._exit(0)
        os.read(r, 1)
    print("done", flush=True)
"""


def _charged(proc: subprocess.Popen, kind: str, ms: float) -> float:
    before = proc_clock.tree_cpu_ns(proc.pid)
    proc.stdin.write(f"{kind} {ms}\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "done"
    return (proc_clock.tree_cpu_ns(proc.pid) - before) / 1e6


@pytest.mark.parametrize("kind", ["thread", "child", "orphan"])
def test_work_in_another_thread_or_process_is_charged(kind):
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.2)  # (its start-up is not what is measured)
        charged = _charged(proc, kind, 200.0)
        # at least the 200 ms burned (a reaped child's time is counted in ticks: 10 ms)
        assert charged >= 180.0, charged
    finally:
        proc.kill()
        proc.wait()


def test_a_process_outside_a_pid_namespace_is_its_own_root():
    if len(proc_clock._ns_pids(os.getpid())) > 1:
        pytest.skip("the tests themselves run in a PID namespace here")
    # (run from a test process, which no sandbox holds)
    assert proc_clock.sandbox_root(os.getpid()) == os.getpid()
