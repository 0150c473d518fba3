"""Every CPU timing worker holds one heap policy (``runtime/steady_heap``): large blocks come
from the heap and stay there between calls, whatever the process did before."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import ctypes, ctypes.util, sys
from autocomp_cuda.runtime import steady_heap

libc = ctypes.CDLL(ctypes.util.find_library("c"))
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "steady":
    assert steady_heap.steady()
before = libc.mallinfo2().hblks
block = libc.malloc(8 << 20)
mapped = libc.mallinfo2().hblks - before  # 1: the block got a mapping of its own
libc.free(block)
print(mapped, libc.mallinfo2().arena)  # what the heap kept after the block went back
"""


def _probe(mode: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), int(out[1])


def test_a_steady_heap_serves_large_blocks_from_itself_and_keeps_them():
    mapped, _ = _probe("default")
    assert mapped == 1  # glibc's default: a fresh 8 MiB mapping, faulted page by page
    mapped, kept = _probe("steady")
    assert mapped == 0 and kept >= 8 << 20  # from the heap, still there after the free
