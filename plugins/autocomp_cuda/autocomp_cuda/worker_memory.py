"""The engine's hands in a timing worker's memory (the CPU device): it writes each timed call's
inputs into the worker's input buffers and reads the call's output out, itself, through
``/proc/<pid>/mem`` while the worker sleeps on its socket.

Why: whatever the harness does inside the candidate's process (drawing the inputs, copying
and hashing the output, a cache flush) is code the candidate can rebind, and CPU time the
candidate can spend on its own work while the step looks as long as the baseline worker's.
With the engine moving the bytes, the candidate's process does nothing between an order and
its answer but the call and the socket's glue. What the worker says about its memory (the
layout, where an output lies) is only ever an address to read or write in the worker's own
process: a lie there makes its output wrong or unreadable, never right.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Bytes per element of the dtypes an output may have (the name as ``str(tensor.dtype)``).
ITEMSIZE = {
    **dict.fromkeys(("torch.bool", "torch.uint8", "torch.int8"), 1),
    **dict.fromkeys(("torch.float8_e4m3fn", "torch.float8_e5m2"), 1),
    **dict.fromkeys(("torch.float16", "torch.bfloat16", "torch.int16", "torch.uint16"), 2),
    **dict.fromkeys(("torch.float32", "torch.int32", "torch.uint32"), 4),
    **dict.fromkeys(("torch.float64", "torch.int64", "torch.uint64", "torch.complex64"), 8),
    "torch.complex128": 16,
}
#: The most the engine reads, gathers or writes for one tensor (a claim beyond it is refused;
#: the engine also refuses any output that is not the problem's shape and dtype).
MAX_BYTES = 1 << 32
MAX_DIMS = 16
_OUTPUT = re.compile(r"(\d+) (torch\.\w+) ([\d,]+|-) ([\d,]+|-)")


@dataclass(frozen=True)
class Output:
    """Where a timed call's output lies in its worker, as the worker describes it."""

    address: int
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    def extent(self) -> int:
        """Elements from the first to the last one the tensor reaches (0: empty)."""
        if any(n == 0 for n in self.shape):
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.stride))


def parse_output(text: str) -> Output:
    """``runtime.lockstep.describe_output``'s line; ValueError naming what is wrong."""
    match = _OUTPUT.fullmatch(text)
    if match is None:
        raise ValueError(f"not an output's description: {text[:80]!r}")
    shape, stride = (
        () if f == "-" else tuple(int(n) for n in f.split(",")) for f in match.groups()[2:]
    )
    out = Output(int(match[1]), match[2], shape, stride)
    if out.dtype not in ITEMSIZE:
        raise ValueError(f"an output of dtype {out.dtype}, which the engine cannot read")
    if len(shape) != len(stride) or len(shape) > MAX_DIMS:
        raise ValueError(f"an output's shape {shape} and stride {stride} do not match")
    elements = math.prod(shape)
    if max(out.extent(), elements) * out.itemsize > MAX_BYTES:
        raise ValueError(f"an output of {elements * out.itemsize} bytes")
    return out


def parse_layout(text: str, staging: bool) -> dict[str, list[tuple[int, int]]]:
    """The layout a worker's ``ready`` carries: ``inputs`` (and, ``staging``: the baseline's
    worker, ``staging``) as lists of (address, bytes); ValueError naming what is wrong."""
    try:
        layout = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"its layout is not JSON ({exc})") from None
    keys = ("inputs", "staging") if staging else ("inputs",)
    if not isinstance(layout, dict) or set(layout) != set(keys):
        raise ValueError(
            f"its layout names {sorted(layout) if isinstance(layout, dict) else layout!r}"
        )
    spans = {}
    for key in keys:
        entries = layout[key]
        if not isinstance(entries, list) or not all(
            isinstance(e, list)
            and len(e) == 2
            and all(type(v) is int and v >= 0 for v in e)
            and e[1] <= MAX_BYTES
            for e in entries
        ):
            raise ValueError(f"its layout's {key} are not [address, bytes] pairs")
        spans[key] = [(a, n) for a, n in entries]
    return spans


@dataclass(frozen=True)
class Mapping:
    """One line of ``/proc/<pid>/maps``: its address range, whether it is mapped shared (a
    memfd, a file or shared memory mapped ``MAP_SHARED``: the only memory two addresses of one
    process can both reach) and whether it is anonymous (no file behind it: the heap, a
    private ``mmap`` of no file, a stack)."""

    low: int
    high: int
    shared: bool
    anonymous: bool

    def overlaps(self, address: int, size: int) -> bool:
        return address < self.high and self.low < address + size


def mappings(pid: int) -> list[Mapping]:
    """Process ``pid``'s memory map, read from outside; OSError where it cannot be read."""
    found = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            span, perms, inode = fields[0], fields[1], fields[4]
            path = fields[5].strip() if len(fields) > 5 else ""
            low, high = span.split("-")
            anonymous = inode == "0" and (not path or path.startswith("["))
            found.append(Mapping(int(low, 16), int(high, 16), perms[3:4] == "s", anonymous))
    return found


class Memory:
    """One worker's memory, opened once it is ready (OSError where this process may not)."""

    def __init__(self, pid: int) -> None:
        self.fd = os.open(f"/proc/{pid}/mem", os.O_RDWR | os.O_CLOEXEC)

    def read(self, address: int, size: int) -> bytes:
        """``size`` bytes at ``address``; OSError where they are not mapped."""
        parts, done = [], 0
        while done < size:
            chunk = os.pread(self.fd, min(size - done, 1 << 26), address + done)
            if not chunk:
                raise OSError(f"nothing readable at {address + done:#x}")
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def write(self, address: int, data: bytes) -> None:
        view, done = memoryview(data), 0
        while done < len(data):
            wrote = os.pwrite(self.fd, view[done : done + (1 << 26)], address + done)
            if wrote <= 0:
                raise OSError(f"nothing writable at {address + done:#x}")
            done += wrote

    def read_output(self, out: Output) -> bytes:
        """The output's elements in row-major order (what ``output_digest`` hashes)."""
        extent = out.extent()
        if extent == 0:
            return b""
        raw = self.read(out.address, extent * out.itemsize)
        if out.stride == _row_major(out.shape):
            return raw
        import numpy as np  # (an output laid out otherwise: a transposed or expanded view)

        elements = np.frombuffer(raw, dtype=np.dtype((np.void, out.itemsize)))
        view = np.lib.stride_tricks.as_strided(
            elements, out.shape, [s * out.itemsize for s in out.stride], writeable=False
        )
        return np.ascontiguousarray(view).tobytes()

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class Watchdog:
    """Ends a worker whose memory the engine has been reading or writing past the deadline (on
    ``time.monotonic``): a page the kernel cannot bring in (a region a candidate registered
    with userfaultfd, a file on a mount that never answers) would hold the engine's read for
    ever; the worker's end releases it, and the read fails."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.pid = 0
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="worker-memory-watchdog", daemon=True
        )
        self._thread.start()

    @contextmanager
    def watching(self, pid: int) -> Iterator[None]:
        self.pid = pid
        try:
            yield
        finally:
            self.pid = 0

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            pid = self.pid
            if pid and time.monotonic() > self.deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                self.killed = True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
