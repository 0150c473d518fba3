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
# about N ms, or to leave its children to the kernel to reap ("autoreap 0"), then to answer
# "done" (and the caller reads the tree's CPU).
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
    elif kind == "autoreap":  # the kernel reaps its children from now on
        import signal; signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    elif kind == "orphan":
        r, w = os.pipe()
        if os.fork() == 0:
            burn(ms); os.write(w, b"x"); time.sleep(30); os._exit(0)
        os.read(r, 1)
    print("done", flush=True)
"""


def _charged(proc: subprocess.Popen, kind: str, ms: float) -> float:
    ledger = proc_clock.Ledger(proc.pid)
    before = ledger.read_ns()
    proc.stdin.write(f"{kind} {ms}\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "done"
    return (ledger.read_ns() - before) / 1e6


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


def test_a_process_that_ends_keeps_its_cpu_and_is_named():
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        _charged(proc, "autoreap", 0.0)  # (a child that ends vanishes, its CPU in no account)
        _charged(proc, "orphan", 100.0)  # a child that burned 100 ms and now sleeps
        ledger = proc_clock.Ledger(proc.pid)
        before = ledger.read_ns()
        (child,) = [pid for pid in ledger.seen if pid != proc.pid]
        os.kill(child, 9)
        time.sleep(0.2)
        assert ledger.read_ns() >= before  # its CPU is never taken back
        assert ledger.ended == {child}
    finally:
        proc.kill()
        proc.wait()
