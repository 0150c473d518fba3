"""Where a timing worker's threads run while its calls are timed, sampled by the kernel from
outside the worker (a perf event on each thread's task clock, the engine's, read from a ring
buffer the worker cannot reach): the engine's own evidence that the candidate's compiled code
ran in its timed calls (the CPU device).

The worker's record of its kernels lives in the candidate's process, and so does the list of
what its process has mapped: a pure-PyTorch program once mapped a copied shared object where
its builds lie and forged the record, and passed as a custom kernel (the fifth meter red
team's a08). A sample says only where a thread's instruction pointer was, every
``PERIOD_NS`` of the CPU time it used while the timed calls ran; the engine sorts the samples by
the executable mappings of the worker's files as it read them when timing began, and counts
a mapping only where it maps the same file at the same place when timing ended.

The candidate's own code: the builds the engine placed in its worker (by device and inode,
recorded before the candidate ran: a file it wrote itself is not one), less each page whose
content is a page of a library the baseline's worker runs (a build may hold a copy of torch's
code and map it over torch's own: the eighth red team's a03).

What the samples show: code of the candidate's own builds ran for some share of the timed
calls' CPU time. What that code is stays the candidate's beyond that, and so does that it ran
in every call (the per-call count is the worker's word, believed where it incriminates).
Sampling costs each sampled thread ~5% of its time here; both workers are sampled alike, so
the ratio of their times holds.
"""

from __future__ import annotations

import bisect
import ctypes
import fcntl
import functools
import mmap
import os
import platform
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

#: One sample per this much CPU time of a sampled thread (ns): 40 samples in 4 ms of calls.
PERIOD_NS = 100_000
#: Fewer samples than this in a worker's calls cannot show that its own code never ran: a
#: tiny honest kernel's share of a 0.05 ms call (glue, dispatch, allocation around it) was
#: 2-6%, which 100 samples missed one time in twenty; at 400, a 2% share is missed 3 in 10,000.
CONCLUSIVE = 400
#: The ring buffer's data pages for the worker's main thread, which makes its calls (64 KiB:
#: ~4,000 samples, drained after each call), and for each of its other threads. Rings are
#: locked memory, charged to the engine's user where it is not root (``perf_event_mlock_kb``).
DATA_PAGES, OTHER_DATA_PAGES = 16, 1
_SYSCALL = {"x86_64": 298, "aarch64": 241}
_PERF_TYPE_SOFTWARE, _TASK_CLOCK, _SAMPLE_IP = 1, 1, 1
_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
_FD_CLOEXEC = 8
_ENABLE, _DISABLE = 0x2400, 0x2401
_RECORD_LOST, _RECORD_SAMPLE = 2, 9
_HEAD, _TAIL = 1024, 1032  # data_head, data_tail in perf_event_mmap_page
_PAGE_MASK = ~(mmap.PAGESIZE - 1)
_RECORD_ROOM = 64  # more than a sample's or a lost record's bytes
_KEY_BYTES = 16  # a code page is looked up among a library's by 3 x this many of its bytes


@dataclass(frozen=True)
class CodeMapping:
    """An executable mapping of a file, as ``/proc/<pid>/maps`` shows it."""

    low: int
    high: int
    offset: int  # where in the file it starts
    device: int  # the file's, as ``os.stat``'s ``st_dev``
    inode: int
    path: str
    writable: bool = False  # (``rwxp``: its pages can be changed in place)

    @property
    def file(self) -> tuple[int, int]:
        return self.device, self.inode


@dataclass
class Samples:
    """One worker's samples: per executable file mapping at the start (``mappings``), how many
    fell there (``hits``), and of those how many in the candidate's own code (``own``: a
    mapping of a build the engine placed, on a page whose content is not a page of a library
    the baseline's worker runs); ``elsewhere`` (anonymous memory, a mapping made later),
    ``lost`` (a ring was full); ``unchanged``: per mapping, whether it mapped the same file
    at the same place when timing ended (None: not read yet). ``error``: why the worker could
    not be sampled (then nothing else is set)."""

    mappings: list[CodeMapping] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    own: list[int] = field(default_factory=list)
    built: list[bool] = field(default_factory=list)  # a mapping of a build the engine placed
    elsewhere: int = 0
    lost: int = 0
    unchanged: list[bool] | None = None
    error: str = ""

    @property
    def taken(self) -> int:
        return sum(self.hits) + self.elsewhere

    @property
    def own_mapped(self) -> bool:
        """A build the engine placed is mapped as code, unchanged to the end."""
        unchanged = self.unchanged or [False] * len(self.mappings)
        return any(b and same for b, same in zip(self.built, unchanged))

    @property
    def own_code(self) -> int:
        """The samples in the candidate's own code, in mappings unchanged to the end."""
        unchanged = self.unchanged or [False] * len(self.mappings)
        return sum(n for n, same in zip(self.own, unchanged) if same)


@functools.cache
def available() -> str:
    """Why this machine cannot sample a process's threads ("" where it can): probed once, on
    a thread of the engine's own, before any candidate could take the locked memory a ring
    needs (a worker that cannot be sampled where the machine can has no evidence)."""
    try:
        Sampler(os.getpid(), threads=[threading.get_native_id()]).close()
    except OSError as exc:
        return f"{exc}: perf events need root, or kernel.perf_event_paranoid at most 2"
    return ""


def code_mappings(pid: int) -> list[CodeMapping]:
    """Process ``pid``'s executable mappings of files, by address; OSError where its maps
    cannot be read."""
    found = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or "x" not in fields[1] or not fields[5].startswith("/"):
                continue
            low, high = (int(v, 16) for v in fields[0].split("-"))
            major, minor = (int(v, 16) for v in fields[3].split(":"))
            path = fields[5].rstrip("\n").removesuffix(" (deleted)")
            device = os.makedev(major, minor)
            found.append(
                CodeMapping(
                    low, high, int(fields[2], 16), device, int(fields[4]), path, "w" in fields[1]
                )
            )
    return sorted(found, key=lambda m: m.low)


class Sampler:
    """Task-clock samples of every thread of process ``pid`` (its threads when made: a timing
    worker can start none after), taken only while ``start``ed; OSError where the kernel
    refuses (no perf events here, or this process may not watch that one)."""

    def __init__(
        self,
        pid: int,
        threads: list[int] | None = None,
        builds: frozenset[tuple[int, int]] = frozenset(),
    ) -> None:
        number = _SYSCALL.get(platform.machine())
        if number is None:
            raise OSError(f"perf events are not wired for {platform.machine()}")
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._number = number
        self.pid = pid
        self._rings: list[tuple[int, mmap.mmap]] = []  # (fd, ring), the main thread's first
        self.samples = Samples(code_mappings(pid))
        self.samples.hits = [0] * len(self.samples.mappings)
        self.samples.own = [0] * len(self.samples.mappings)
        self._lows = [m.low for m in self.samples.mappings]
        # the pages of the candidate's own code: its builds' mappings (``builds``: each one's
        # (st_dev, st_ino), as the engine placed it), less pages ``judge``d not to be
        self._own = self.samples.built = [
            m.file in builds and not m.writable for m in self.samples.mappings
        ]
        # samples in those mappings, by page, and each page judged its own or not (``judge``)
        self._page_hits: dict[int, int] = {}
        self._judged: dict[int, bool] = {}
        try:
            tids = threads or sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
            for tid in tids:
                try:
                    self._rings.append(
                        self._open(tid, DATA_PAGES if tid == pid else OTHER_DATA_PAGES)
                    )
                except ProcessLookupError:
                    if tid == pid:
                        raise
        except BaseException:
            self.close()
            raise

    def _open(self, tid: int, pages: int) -> tuple[int, mmap.mmap]:
        attr = bytearray(64)  # PERF_ATTR_SIZE_VER0
        flags = _DISABLED | _EXCLUDE_KERNEL | _EXCLUDE_HV
        struct.pack_into(
            "IIQQQQQ",
            attr,
            0,
            _PERF_TYPE_SOFTWARE,
            64,
            _TASK_CLOCK,
            PERIOD_NS,
            _SAMPLE_IP,
            0,
            flags,
        )
        fd = self._libc.syscall(self._number, bytes(attr), tid, -1, -1, _FD_CLOEXEC)
        if fd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"perf_event_open: {os.strerror(errno)}")
        try:
            ring = mmap.mmap(fd, mmap.PAGESIZE * (1 + pages))
        except OSError:
            os.close(fd)
            raise
        return fd, ring

    def start(self) -> None:
        for fd, _ in self._rings:
            fcntl.ioctl(fd, _ENABLE)

    def stop(self, keep: bool = True) -> None:
        """Sampling off, and what was sampled sorted into ``samples``."""
        for fd, _ in self._rings:
            fcntl.ioctl(fd, _DISABLE)
        self.drain(keep)

    def drain(self, keep: bool = True) -> None:
        """What the rings hold sorted into ``samples`` (also while sampling); not ``keep``:
        dropped (samples of what the caller does not judge)."""
        for _, ring in self._rings:
            if keep:
                self._drain(ring)
            else:
                struct.pack_into("Q", ring, _TAIL, struct.unpack_from("Q", ring, _HEAD)[0])

    def _drain(self, ring: mmap.mmap) -> None:
        size = len(ring) - mmap.PAGESIZE
        (head,) = struct.unpack_from("Q", ring, _HEAD)
        (tail,) = struct.unpack_from("Q", ring, _TAIL)
        if head - tail > size - _RECORD_ROOM:  # (full: what came next was dropped, and the
            self.samples.lost += 1  # record of that comes only with the next sample written)
        data = ring[mmap.PAGESIZE :]
        data = data + data  # (a record may wrap around the end)
        samples = self.samples
        while tail < head:
            at = tail % size
            kind, _, length = struct.unpack_from("IHH", data, at)
            if length < 8:
                break
            if kind == _RECORD_SAMPLE:
                (ip,) = struct.unpack_from("Q", data, at + 8)
                i = bisect.bisect_right(self._lows, ip) - 1
                if i >= 0 and ip < samples.mappings[i].high:
                    samples.hits[i] += 1
                    if self._own[i]:
                        page = ip & _PAGE_MASK
                        self._page_hits[page] = self._page_hits.get(page, 0) + 1
                else:
                    samples.elsewhere += 1
            elif kind == _RECORD_LOST:
                samples.lost += struct.unpack_from("Q", data, at + 16)[0]
            tail += length
        struct.pack_into("Q", ring, _TAIL, head)

    def own_mappings(self) -> list[CodeMapping]:
        """The mappings of the candidate's builds (its own code, but for pages ``judge``d
        not to be)."""
        return [m for m, own in zip(self.samples.mappings, self._own) if own]

    def judge(self, foreign: Callable[[list[int]], set[int]]) -> None:
        """The pages of its builds that samples fell on and not judged yet, judged now:
        ``foreign`` says which of them are not the candidate's own code (``copied_pages``);
        ``samples.own`` counts the samples on the others. Only pages a sample fell on are
        read: a build padded with 200 MB of pages that are never run once cost the engine
        38 s to compare whole (the eleventh red team's a03)."""
        new = [page for page in self._page_hits if page not in self._judged]
        if new:
            others = foreign(new)
            self._judged.update((page, page not in others) for page in new)
        own = [0] * len(self.samples.mappings)
        for page, hits in self._page_hits.items():
            if self._judged.get(page):
                own[bisect.bisect_right(self._lows, page) - 1] += hits
        self.samples.own = own

    def finish(self) -> Samples:
        """The samples, each mapping checked against the worker's maps now."""
        try:
            now = set(code_mappings(self.pid))
        except OSError:
            now = set()
        self.samples.unchanged = [m in now for m in self.samples.mappings]
        return self.samples

    def close(self) -> None:
        for fd, ring in self._rings:
            ring.close()
            os.close(fd)
        self._rings = []


def copied_pages(
    read: Callable[[int, int], bytes],
    own: list[CodeMapping],
    theirs: list[CodeMapping],
    pages: list[int],
) -> set[int]:
    """Those of ``pages`` (addresses in ``own`` mappings) that are not the build's own code:
    their content as ``read`` from the worker's memory differs from the build's file there
    (changed in memory), or is a page of a library of ``theirs`` (from its file)."""
    found = set()
    size = mmap.PAGESIZE
    lows = [m.low for m in own]
    library = tuple(theirs)
    for page in pages:
        i = bisect.bisect_right(lows, page) - 1
        if i < 0 or page >= own[i].high:
            found.add(page)
            continue
        m = own[i]
        placed = _file_bytes(m.path, m.device, m.inode, m.offset + page - m.low, size)
        try:
            memory = read(page, size)
        except OSError:  # (unmapped since: what runs there now is not known)
            found.add(page)
            continue
        if placed != memory or _in_libraries(memory, library):
            found.add(page)
    return found


@functools.lru_cache(maxsize=1024)
def _in_libraries(page: bytes, theirs: tuple[CodeMapping, ...]) -> bool:
    """``page`` is one of the code pages of these mappings' files."""
    for m in theirs:
        offsets = _page_index(m.path, m.device, m.inode, m.offset, m.high - m.low).get(
            _page_key(page), ()
        )
        for offset in offsets:
            if _file_bytes(m.path, m.device, m.inode, offset, len(page)) == page:
                return True
    return False


def _page_key(page: bytes | mmap.mmap, at: int = 0) -> bytes:
    """A page's bytes at its start, middle and end (many pages of a library start alike:
    167 of ``libtorch_cpu.so``'s with 32 zero bytes)."""
    half, end = at + mmap.PAGESIZE // 2, at + mmap.PAGESIZE
    return (
        page[at : at + _KEY_BYTES] + page[half : half + _KEY_BYTES] + page[end - _KEY_BYTES : end]
    )


@functools.lru_cache(maxsize=4096)
def _page_index(
    path: str, device: int, inode: int, offset: int, size: int
) -> dict[bytes, list[int]]:
    """The file offsets of a file's pages from ``offset`` over ``size`` bytes, by their
    ``_page_key`` (read once per file and place; empty where it is not that file any more)."""
    index: dict[bytes, list[int]] = {}
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno())[1:3] != (inode, device):
                return index
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as code:
                end = min(len(code), offset + size)
                for at in range(offset, end - mmap.PAGESIZE + 1, mmap.PAGESIZE):
                    index.setdefault(_page_key(code, at), []).append(at)
    except (OSError, ValueError):
        return {}
    return index


def _file_bytes(path: str, device: int, inode: int, offset: int, size: int) -> bytes:
    """``size`` bytes of a file from ``offset`` (b"" where it is not that file any more)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if os.fstat(fd)[1:3] != (inode, device):
            return b""
        return os.pread(fd, size, offset)
    except OSError:
        return b""
    finally:
        os.close(fd)
