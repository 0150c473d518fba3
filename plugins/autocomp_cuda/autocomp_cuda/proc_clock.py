"""The CPU time a sandboxed worker spends, read by the engine from the kernel's accounting.

On the CPU device the engine times each call by the CPU time the worker's whole sandbox
consumed between its order and its answer (``lockstep``): the kernel counts it, no process in
the sandbox can change it, every thread and child process the candidate starts is charged to
it, and the time a worker spends waiting for a core on a busy machine is not (which wall-clock
windows on a shared two-core machine are full of).

What is summed, for every process in the subtree of the worker's sandbox: its CPU clock (the
kernel's nanoseconds for all its threads, those that have ended included; any process may read
another's, ``clock_getcpuclockid``), plus what its reaped children ran (``cutime``/``cstime``,
in clock ticks), so a thread or child that computes and ends inside a window is charged too.
The subtree's root is the init of the worker's PID namespace in the namespace isolation
levels (orphans are reparented to it), else the worker itself.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


def available() -> bool:
    """The kernel exposes what this needs (process CPU clocks and the children lists)."""
    try:
        _process_clock_ns(os.getpid())
    except OSError:
        return False
    return (PROC / "self" / "task" / str(os.getpid()) / "children").exists()


def _process_clock_ns(pid: int) -> int:
    # clock_getcpuclockid(pid): the kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def _ns_pids(pid: int) -> list[str]:
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return line.split()[1:]
    return [str(pid)]


def _parent(pid: int) -> int:
    stat = (PROC / str(pid) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def sandbox_root(pid: int) -> int:
    """The init of ``pid``'s PID namespace when ``pid`` lives in a namespace of its own (the
    whole sandbox hangs below it), else ``pid``."""
    current = pid
    for _ in range(8):  # (supervisor -> init -> program: a couple of steps at most)
        ns = _ns_pids(current)
        if len(ns) < 2:
            return pid  # not namespaced
        if ns[-1] == "1":
            return current
        current = _parent(current)
    return pid


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in (PROC / str(pid) / "task").iterdir():
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def _process_ns(pid: int) -> int:
    stat = (PROC / str(pid) / "stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    reaped = (int(fields[13]) + int(fields[14])) * _TICK_NS  # cutime, cstime
    return _process_clock_ns(pid) + reaped


#: x86-64 and aarch64 numbers of the calls a worker waits for its next order in (read,
#: recvfrom); elsewhere the state alone is used.
_WAITING_CALLS = {"x86_64": {"0", "45"}, "aarch64": {"63", "207"}}.get(os.uname().machine)


def _in_a_read(pid: int) -> bool:
    """Blocked in a read of its socket (not, say, waiting a moment for the interpreter's
    lock on its way there). True where the kernel does not show it."""
    if _WAITING_CALLS is None:
        return True
    try:
        call = (PROC / str(pid) / "syscall").read_text().split()[0]
    except (OSError, IndexError):
        return True
    return call in _WAITING_CALLS


def wait_asleep(pid: int, timeout_s: float = 0.05) -> bool:
    """Wait until ``pid``'s main thread sleeps (a worker blocked on its socket): the kernel
    settles a thread's CPU time when it is switched out, so a process read while it still
    runs (preempted between its last message and its wait, on a busy machine) would carry
    that tail into the next window. False if it did not sleep in time (or is gone)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            stat = (PROC / str(pid) / "stat").read_text()
        except OSError:
            return False
        if stat[stat.rindex(")") + 2] in "SD" and _in_a_read(pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0)


def tree_cpu(root: int) -> dict[int, int]:
    """Per process below (and at) ``root``: the nanoseconds of CPU it has used so far (exact
    for processes asleep when it is read: the worker waits on its socket then)."""
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            found[pid] = _process_ns(pid)
            todo.extend(_children(pid))
        except (OSError, ValueError):
            pass  # (a process that ended while the tree was read)
    return found


def running(pid: int) -> bool:
    """Process ``pid`` is there and not a zombie (its end not yet reaped)."""
    try:
        with open(PROC / str(pid) / "stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def task_count(pid: int) -> int:
    """How many threads process ``pid`` has (0: it has ended)."""
    try:
        return len(os.listdir(PROC / str(pid) / "task"))
    except OSError:
        return 0


def cannot_start_tasks(pid: int) -> bool:
    """``pid``'s hard limit on processes is 0: it can start no process or thread."""
    try:
        for line in (PROC / str(pid) / "limits").read_text().splitlines():
            if line.startswith("Max processes"):
                return line.split()[3] == "0"
    except OSError:
        pass
    return False


class Ledger:
    """The CPU of a sandbox's processes as the engine last read each one: a process that has
    ended keeps its last reading (its CPU is never taken back), and the ones that ended are
    named (their last moments are not counted: the caller refuses them)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, int] = {}
        self.ended: set[int] = set()

    def read_ns(self) -> int:
        now = tree_cpu(self.root)
        self.ended |= set(self.seen) - set(now)
        for pid, ns in now.items():
            self.seen[pid] = max(ns, self.seen.get(pid, 0))
        return sum(self.seen.values())
