"""One heap policy for every timing worker on the CPU device.

glibc serves a large allocation (an output tensor of a MiB or more) either from its heap or by
mapping fresh pages, and which it does depends on the process's history: the mmap threshold
rises the first time a mapped block is freed, and a heap top above the trim threshold is given
back to the kernel. A program that allocates three 1 MiB tensors a call ran at 1.4 ms in one
worker and at 3.4 ms in another (a fault on every fresh page), so the same eager program
measured 0.4x or 2.6x against itself depending on which worker it landed in. Fixing both
thresholds before the warm-up puts every worker in the same steady state: blocks up to the
largest threshold glibc accepts come from the heap and stay mapped between calls, as in a
long-running process. A candidate may change its own process's policy; the baseline's worker
is out of its reach.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit)
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 2**30


def steady() -> bool:
    """Fix this process's heap thresholds; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
