"""The lock-step protocol between the engine and the two timing workers (the baseline's and
the candidate's): one Unix socket per worker, ``clock.sock`` in its work dir, on which the
engine listens before the job is handed over and which the worker connects to while it sets
up, before any candidate code exists in its process. The engine takes that one connection
and no other, and learns from it the worker's process (its peer credentials).

One line per message. The worker says ``ready`` once its warm-up is done. What a timed call
is then depends on the device.

**CPU device: the worker only makes calls** (``moved``). ``ready`` carries the worker's layout
(``ready {"inputs": [[address, bytes], ...], "staging": [...]}``): where its input buffers lie
in its memory, and, in the baseline's worker, where it draws each call's inputs. Before the
first call the engine orders the baseline's worker ``draw <r> <seed>`` for every call (it
draws the inputs of that seed into its staging buffers and answers ``drawn <r>``) and reads
each set out of that worker's memory. For timed call r, for each contender, in four windows
clocked end to end: it orders ``<r> <who> 0`` (the worker lets its last output go and answers
``<r> <who> armed``); it says ``ping``, answered ``pong`` where the worker waits for ``go``
(in the baseline's worker, the least glue a window holds); it writes the inputs into the
worker's input buffers (``/proc/<pid>/mem``, while the worker sleeps) and says ``go`` (the
worker makes the call, and nothing else, and answers ``done``); it says ``describe`` (the
worker checks what the call returned and answers ``<r> <who> out <address> <dtype> <shape>
<stride>``, ``describe_output``), and the engine reads the output out of its memory and keeps
it for the judge. Between its calls a worker does nothing; after the last the engine says
``settle`` and the worker checks itself. So the call's window holds the call and the socket's
glue alone, the same glue as the ping's (a leaner serving loop has nothing there to shave),
the harness's work around it is charged at no less than the baseline's worker's, and there is
no record a candidate could forge (``autocomp_cuda.worker_memory``). The CPU device flushes no
cache: the inputs arrive written by the engine, the weights are warm, alike in both workers.

**GPU: four steps in the worker** (the device's memory cannot be reached from the engine):

- ``<r> <who> <seed>`` ("time call r of contender ``who``: ``cand``, ``base`` or
  ``compiled``, on the inputs of ``seed``"): the worker draws the inputs into its input
  buffers and answers ``<r> <who> inputs`` (``<r> <who> none``: a contender it could not make);
- ``flush``: it flushes the cache and answers ``flushed``;
- ``call``: it makes the call, and nothing else, and answers ``called``;
- ``keep``: it copies the output out and answers ``<r> <who> <digest>``, the SHA-256 of
  that output (``output_digest``).

On a GPU the engine then says ``settle``: the worker runs its checks of the call and says
``settled``. Nothing is ordered to anyone in between, so no worker's checks run beside
another's timed call.

On a GPU each of the harness's own steps around the call is clocked apart and compared with
the same step in the baseline's worker, where no candidate runs: a candidate that skips one
(a flush that never ran leaves its call's caches warm) is refused, one that does its work
inside one is charged for it. Whatever a worker does between an order and its answer is
charged to that step, whatever it does elsewhere cannot produce that call's output, and the
output it later hands to the judge must hash to the digest the engine holds.

Standard library only (the engine imports it too); ``output_digest`` imports torch lazily.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from pathlib import Path
from typing import Any

SOCKET = "clock.sock"
READY = "ready"
#: The harness's steps of a timed call after the inputs, each ordered and answered on its own
#: (``keep`` is answered with the output's digest).
FLUSH, FLUSHED = "flush", "flushed"
CALL, CALLED = "call", "called"
KEEP = "keep"
INPUTS = "inputs"  # (the answer to the order that draws them)
SETTLE = "settle"
SETTLED = "settled"
#: CPU device: the baseline's worker draws a call's inputs into its staging buffers
DRAW, DRAWN = "draw", "drawn"
#: CPU device: a call in three windows: the order answered ``<r> <who> armed``; ``go`` (the
#: inputs written by then) answered ``done`` once the call returned; ``describe`` answered
#: with where its output lies (``<r> <who> out ...``)
ARMED, GO, DONE, DESCRIBE = "armed", "go", "done", "describe"
OUT = "out"
#: CPU device: a worker waiting for ``go`` answers at once (in the baseline's, the engine
#: measures the least glue a window holds: a message read and one written, and nothing else)
PING, PONG = "ping", "pong"
#: The longest line either side ever sends (``ready`` with a layout of many inputs).
MAX_LINE = 8192


def socket_path(work: Path) -> Path:
    return work / SOCKET


def output_digest(tensor: Any) -> str:
    """SHA-256 of a CPU tensor's dtype, shape and bytes: what the worker commits to when a
    timed call ends, and what the judge recomputes from the output it is handed."""
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    digest = hashlib.sha256(f"{tensor.dtype}|{tuple(tensor.shape)}|".encode())
    if flat.numel():
        digest.update(memoryview(flat.view(torch.uint8).numpy()))
    return digest.hexdigest()


def describe_output(tensor: Any) -> str:
    """Where a CPU tensor's elements lie: ``<address> <dtype> <shape> <stride>`` (shape and
    stride comma-separated, ``-`` for none), what the engine needs to read them itself."""
    shape = ",".join(str(n) for n in tensor.shape) or "-"
    stride = ",".join(str(n) for n in tensor.stride()) or "-"
    return f"{tensor.data_ptr()} {tensor.dtype} {shape} {stride}"


def parse_order(line: str) -> tuple[int, str, int]:
    """An order's line as (call r, contender or ``draw``, seed)."""
    first, second, seed = line.split()
    if first == DRAW:
        return int(second), DRAW, int(seed)
    return int(first), second, int(seed)


class Lines:
    """Lines over a connected socket (blocking, or with a timeout the caller sets)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""

    def send(self, line: str) -> None:
        self.sock.sendall((line + "\n").encode())

    def receive(self) -> str:
        """The next line; EOFError if the other side closed, ValueError if it runs too long."""
        while b"\n" not in self.pending:
            if len(self.pending) > MAX_LINE:
                raise ValueError("a line longer than any the protocol has")
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError("the other side closed the connection")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode(errors="replace")


# --------------------------------------------------------------------------- worker side


class WorkerEnds(Lines):
    """The worker's end: connected while it sets up, before any candidate code is imported."""

    def __init__(self, work: Path) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # (relative where it can: a socket's path is limited to 107 bytes)
        sock.connect(SOCKET if Path.cwd() == work else str(socket_path(work)))
        super().__init__(sock)

    def next_order(self) -> tuple[int, str, int]:
        """Block until the engine's next order: (call r, contender, seed), or (call r,
        ``draw``, seed) for the baseline's worker on the CPU device. The phase's watchdog
        ends a worker that is never ordered again."""
        return parse_order(self.receive())

    def report_done(self, r: int, who: str, digest: str) -> None:
        self.send(f"{r} {who} {digest}")

    def await_step(self, step: str) -> None:
        """Block until the engine orders ``step`` (``flush``, ``call``, ``keep``, ``settle``)."""
        line = self.receive()
        if line != step:
            raise ValueError(f"{line!r} from the engine where {step!r} was due")

    def await_settle(self) -> None:
        self.await_step(SETTLE)


# --------------------------------------------------------------------------- engine side


class EngineEnds:
    """The engine's end: listening before the worker is handed its job; ``accept`` takes the
    worker's connection (the first, made before its candidate exists) and no other."""

    def __init__(self, work: Path, owner: tuple[int, int] | None = None) -> None:
        self.work = work
        path = socket_path(work)
        path.unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bound through the dir's descriptor: a socket's path is limited to 107 bytes, and a
        # work dir under a long TMPDIR is not
        folder = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.listener.bind(f"/proc/self/fd/{folder}/{SOCKET}")
        finally:
            os.close(folder)
        os.chmod(path, 0o600)
        if owner is not None:  # (the sandbox's uid must be able to connect)
            os.chown(path, *owner)
        self.listener.listen(1)
        self.lines: Lines | None = None
        self.pid = 0

    def accept(self, timeout_s: float) -> None:
        """The worker's connection, and its process id as this process sees it."""
        self.listener.settimeout(max(timeout_s, 0.001))
        conn, _ = self.listener.accept()
        self.listener.close()  # nobody else, ever
        ucred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        self.pid = struct.unpack("3i", ucred)[0]
        self.lines = Lines(conn)

    def order(self, r: int, who: str, seed: int) -> None:
        self.tell(f"{r} {who} {seed}")

    def tell(self, line: str) -> None:
        if self.lines is None:
            raise RuntimeError("the worker has not connected")
        self.lines.send(line)

    def close(self) -> None:
        for sock in (self.listener, self.lines.sock if self.lines else None):
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass
