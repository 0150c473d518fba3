"""Guest memory as the model sees it: bulk reads and writes of byte ranges.

`SpikeMemory` goes through PySpike's MMU, which only offers 64-bit load-reserved /
store-conditional accessors, so every access is done in aligned 8-byte words.
`ByteMemory` is a plain byte array used by unit tests of the model.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .base import BadAddress


class Memory(Protocol):
    def read(self, addr: int, nbytes: int) -> bytes: ...

    def write(self, addr: int, data: bytes) -> None: ...


def read_rows(mem: Memory, addr: int, rows: int, row_bytes: int, stride: int) -> np.ndarray:
    """`rows` rows of `row_bytes` bytes, `stride` bytes apart, as a uint8 array (rows, row_bytes)."""
    if rows == 0 or row_bytes == 0:
        return np.zeros((rows, row_bytes), np.uint8)
    fast = getattr(mem, "read_rows", None)
    if fast is not None and stride % 8 == 0 and stride != row_bytes:
        return fast(addr, rows, row_bytes, stride)
    if stride == row_bytes:
        return np.frombuffer(mem.read(addr, rows * row_bytes), np.uint8).reshape(rows, row_bytes)
    span = (rows - 1) * stride + row_bytes
    if 0 <= stride and span <= 4 * rows * row_bytes:  # dense enough: one read, then slice
        flat = np.frombuffer(mem.read(addr, span), np.uint8)
        idx = np.arange(rows)[:, None] * stride + np.arange(row_bytes)[None, :]
        return flat[idx]
    return np.stack(
        [np.frombuffer(mem.read(addr + r * stride, row_bytes), np.uint8) for r in range(rows)]
    )


class ByteMemory:
    """A flat little-endian memory of `size` bytes starting at `base`."""

    def __init__(self, size: int, base: int = 0) -> None:
        self.base = base
        self.buf = bytearray(size)

    def _offset(self, addr: int, nbytes: int) -> int:
        off = addr - self.base
        if off < 0 or off + nbytes > len(self.buf):
            raise BadAddress(
                f"memory access at {addr:#x}+{nbytes} outside [{self.base:#x}, "
                f"{self.base + len(self.buf):#x})"
            )
        return off

    def read(self, addr: int, nbytes: int) -> bytes:
        off = self._offset(addr, nbytes)
        return bytes(self.buf[off : off + nbytes])

    def read_rows(self, addr: int, rows: int, row_bytes: int, stride: int) -> np.ndarray:
        off = self._offset(addr, (rows - 1) * stride + row_bytes)
        flat = np.frombuffer(self.buf, np.uint8)
        return flat[off + np.arange(rows)[:, None] * stride + np.arange(row_bytes)[None, :]]

    def write(self, addr: int, data: bytes) -> None:
        off = self._offset(addr, len(data))
        self.buf[off : off + len(data)] = data


class SpikeMemory:
    """Guest physical memory through a PySpike processor's MMU (8-byte LR/SC accessors).

    Each accessor call crosses from Python into Spike, so reads fetch exactly the words
    they need, through `map` over precomputed address offsets (no Python loop per word).
    Spike raises (as an opaque RuntimeError) on an address outside its memory; that
    becomes `BadAddress` naming the range."""

    def __init__(self, mmu) -> None:
        self.mmu = mmu
        self._load = mmu.load_reserved_64  # returns the word as a signed int64
        self._store = mmu.store_conditional_64
        self._offsets: dict[tuple[int, int, int], list[int]] = {}
        self.words = 0  # 64-bit accesses made, for statistics

    def read(self, addr: int, nbytes: int) -> bytes:
        try:
            return self._read(addr, nbytes)
        except RuntimeError as exc:
            raise BadAddress(
                f"DMA read of {nbytes} bytes at {addr:#x} is outside main memory"
            ) from exc

    def read_rows(self, addr: int, rows: int, row_bytes: int, stride: int) -> np.ndarray:
        try:
            return self._read_rows(addr, rows, row_bytes, stride)
        except RuntimeError as exc:
            raise BadAddress(
                f"DMA read of {rows} rows at {addr:#x} (stride {stride}) is outside main memory"
            ) from exc

    def write(self, addr: int, data: bytes) -> None:
        try:
            self._write(addr, data)
        except RuntimeError as exc:
            raise BadAddress(
                f"DMA write of {len(data)} bytes at {addr:#x} is outside main memory"
            ) from exc

    def _read(self, addr: int, nbytes: int) -> bytes:
        lo = addr & ~7
        hi = (addr + nbytes + 7) & ~7
        words = list(map(self._load, range(lo, hi, 8)))
        self.words += len(words)
        raw = np.array(words, dtype=np.int64).tobytes()
        start = addr - lo
        return raw[start : start + nbytes]

    def _read_rows(self, addr: int, rows: int, row_bytes: int, stride: int) -> np.ndarray:
        """Strided rows in one pass over the needed 8-byte words (stride a multiple of 8).
        Stride 0 repeats one row: it is read once."""
        off = addr & 7
        nwords = (off + row_bytes + 7) // 8
        first = addr - off
        reads = rows if stride else 1
        key = (reads, nwords, stride)
        offsets = self._offsets.get(key)
        if offsets is None:
            if len(self._offsets) > 1024:
                self._offsets.clear()
            offsets = self._offsets[key] = [
                r * stride + w * 8 for r in range(reads) for w in range(nwords)
            ]
        words = list(map(self._load, map(first.__add__, offsets)))
        self.words += len(words)
        raw = np.array(words, dtype=np.int64).view(np.uint8).reshape(reads, nwords * 8)
        if reads != rows:
            raw = np.broadcast_to(raw, (rows, nwords * 8))
        return raw[:, off : off + row_bytes]

    def _write(self, addr: int, data: bytes) -> None:
        if not data:
            return
        lo = addr & ~7
        hi = (addr + len(data) + 7) & ~7
        head, tail = addr - lo, hi - (addr + len(data))
        load, store = self._load, self._store
        if head or tail:  # partial first/last words: merge with what is there
            current = bytearray(self._read(lo, hi - lo))
            current[head : head + len(data)] = data
            data = bytes(current)
        for a, word in zip(range(lo, hi, 8), np.frombuffer(data, dtype=np.uint64).tolist()):
            load(a)  # the store-conditional needs this reservation
            store(a, word)
        self.words += (hi - lo) // 4


class WindowedMemory:
    """The memory a candidate's DMA may reach: [lo, hi), the program's user data (link.ld), as
    for its CPU accesses under PMP; the harness's own memory and the HTIF mailbox lie outside.
    Every access is checked whole before it reaches `inner`."""

    def __init__(self, inner: Memory, lo: int, hi: int) -> None:
        self.inner, self.lo, self.hi = inner, lo, hi

    @property
    def words(self) -> int:
        return getattr(self.inner, "words", 0)

    def _check(self, first: int, end: int, what: str) -> None:
        if first > end or first < self.lo or end > self.hi:
            raise BadAddress(
                f"DMA {what} at {first:#x}..{end:#x} is outside the program's data "
                f"[{self.lo:#x}, {self.hi:#x})"
            )

    def read(self, addr: int, nbytes: int) -> bytes:
        self._check(addr, addr + nbytes, f"read of {nbytes} bytes")
        return self.inner.read(addr, nbytes)

    def read_rows(self, addr: int, rows: int, row_bytes: int, stride: int) -> np.ndarray:
        if rows and row_bytes:
            last = addr + (rows - 1) * stride
            self._check(min(addr, last), max(addr, last) + row_bytes, f"read of {rows} rows")
        return read_rows(self.inner, addr, rows, row_bytes, stride)

    def write(self, addr: int, data: bytes) -> None:
        self._check(addr, addr + len(data), f"write of {len(data)} bytes")
        self.inner.write(addr, data)
