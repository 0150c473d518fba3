"""On-chip memory as the allocator hands it out: how many bytes per partition SBUF and PSUM hold
at each point of the kernel, and when the schedule may first write a tensor placed where earlier
tensors lived.

The schedule overlaps what it can (a tile declared in a loop is a fresh buffer each iteration),
but only as many SBUF copies as fit: the allocator gives a tensor addresses that earlier tensors
freed, and a write into them waits for the last access of those tenants ("Auto allocation lets
the compiler multi-buffer a tensor declared inside a loop"; "a tensor declared outside and
reused creates WAR dependencies that serialize iterations": nki.md section 1, and its
section 5.3, "shrink the in-flight window" when SBUF is over capacity). The model is an ideal
allocator: the bytes a tensor takes are the ones freed earliest in the schedule (never-used
bytes first), without fragmentation, so it overlaps at least as much as a real one could.
Beyond capacity the compiler spills instead (``loop.py`` prices the traffic). PSUM is counted
(its peak, and NKI allocation's failure) but its banks are not yet a bound on the overlap.

Under NKI allocation (``Allocation.LINEAR``) the allocation is NKI's own linear scan, which
fails when what is live at once does not fit, a ``split_reused_buffers`` second buffer
included ("Fall back to the default neuronx-cc allocation flow when NKI's own
LinearScanAllocation fails during compilation. On by default; set False to surface the failure
(e.g. an SBUF/PSUM out-of-memory) instead of retrying": ``CompileConfig.nki_alloc_fallback``):
``OutOfMemory`` then, and the replay prices the neuronx-cc flow or refuses (``loop.py``).
"""

from __future__ import annotations

import heapq

import numpy as np

from .. import hardware as hw


class OutOfMemory(Exception):
    """NKI allocation cannot place what is live at once; ``message``: one line naming the
    largest live tensor."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Pool:
    """One memory's free bytes per partition, as (schedule time they are free, bytes)."""

    def __init__(self, capacity: int) -> None:
        self.free: list[tuple[float, int]] = [(0.0, capacity)]

    def take(self, nbytes: int) -> tuple[float, int]:
        """The earliest-freed ``nbytes`` (fewer where fewer are free: the rest spills): when
        the last of them is free, and how many were taken."""
        wait, taken = 0.0, 0
        while taken < nbytes and self.free:
            t, n = heapq.heappop(self.free)
            use = min(n, nbytes - taken)
            if n > use:
                heapq.heappush(self.free, (t, n - use))
            taken += use
            wait = max(wait, t)
        return wait, taken

    def give(self, at: float, nbytes: int) -> None:
        if nbytes:
            heapq.heappush(self.free, (at, nbytes))


class Memory:
    """SBUF and PSUM for one replay: live bytes in program order, their peaks, and the pool of
    SBUF's freed bytes."""

    def __init__(self, gen: hw.Generation) -> None:
        self.capacity = {"sbuf": gen.sbuf_bytes_per_partition, "psum": gen.psum_bytes_per_partition}
        # PSUM's 8 banks are not pooled yet: bounding them moved the shipped attention kernels
        # 6-49% on trn2 without a measurement to check against; only their total is checked
        self.pools = {"sbuf": Pool(self.capacity["sbuf"])}
        self.live = {"sbuf": 0, "psum": 0}
        self.peak = {"sbuf": 0, "psum": 0}
        self.held: dict[int, tuple[str, int, int, str]] = {}  # tid -> buffer, bytes, taken, label
        self.rings: set[int] = set()  # tensors with a split_reused_buffers second buffer
        self.nki_allocation = False  # NKI's linear scan allocates: no spilling, it fails

    def place(self, tid: int, buffer: str, nbytes: int, label: str) -> float:
        """A tensor is allocated: the schedule time its first write may start."""
        self._grow(buffer, nbytes, label)
        wait, taken = self._take(buffer, nbytes)
        self.held[tid] = (buffer, nbytes, taken, label)
        return wait

    def second_buffer(self, tid: int) -> float | None:
        """``split_reused_buffers`` alternates a reloaded tensor between two buffers: its second
        one, the first time it is reloaded (the time it is free), else None."""
        if tid in self.rings or tid not in self.held:
            return None
        self.rings.add(tid)
        buffer, nbytes, taken, label = self.held[tid]
        self._grow(buffer, nbytes, f"{label}'s second buffer (split_reused_buffers)")
        wait, more = self._take(buffer, nbytes)
        self.held[tid] = (buffer, 2 * nbytes, taken + more, label)
        return wait

    def release(self, tid: int, regions) -> None:
        """A tensor's last use in program order: its bytes are free once its last access in
        the schedule ends."""
        held = self.held.pop(tid, None)
        if held is None:
            return
        buffer, nbytes, taken, _ = held
        self.live[buffer] -= nbytes
        done = max(regions.r_end.max(initial=0.0), regions.w_end.max(initial=0.0))
        if regions.r_prev is not None:
            done = max(done, regions.r_prev.max(initial=0.0))
        if buffer in self.pools:
            self.pools[buffer].give(float(done), taken)

    def _take(self, buffer: str, nbytes: int) -> tuple[float, int]:
        pool = self.pools.get(buffer)
        if pool is None or self.live[buffer] > self.capacity[buffer]:
            return 0.0, 0  # over capacity: the compiler spills (loop.py prices the traffic)
        return pool.take(nbytes)

    def _grow(self, buffer: str, nbytes: int, label: str) -> None:
        self.live[buffer] += nbytes
        self.peak[buffer] = max(self.peak[buffer], self.live[buffer])
        cap = self.capacity[buffer]
        if self.nki_allocation and self.live[buffer] > cap:
            name = "SBUF" if buffer == "sbuf" else "PSUM"
            largest = max(
                (h for h in self.held.values() if h[0] == buffer),
                key=lambda h: h[1],
                default=(buffer, nbytes, 0, label),
            )
            if largest[1] < nbytes:
                largest = (buffer, nbytes, 0, label)
            raise OutOfMemory(
                f"NKI allocation is out of {name} memory: {self.live[buffer] // 1024} KiB per "
                f"partition live at once, over the {cap // 1024} KiB of {name}; the largest live "
                f"tensor is {largest[3]} ({largest[1] // 1024} KiB per partition)"
            )


def floor_writes(regions, wait: float) -> None:
    """The first write into a tensor's addresses waits for their previous tenants."""
    if wait > 0:
        np.maximum(regions.r_end, wait, out=regions.r_end)
