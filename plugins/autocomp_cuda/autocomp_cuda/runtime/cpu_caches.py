"""The CPU's cache sizes, from sysfs: what the cache flush between timed calls must cover."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

CPU0 = Path("/sys/devices/system/cpu/cpu0")


def largest_cache_bytes() -> int:
    """Size of CPU 0's largest cache, shared or not (the flush on a GPU machine's host)."""
    return max((size for size, _ in _caches()), default=0) or 32 * 2**20


def core_cache_bytes() -> int:
    """Size of the largest cache private to one core (CPU 0's, shared with no other CPU but
    its SMT sibling): what a timed call on one thread can keep between calls. Flushing the
    shared last level instead costs ~1 GB of writes a call on a large server CPU, noise
    larger than the work timed."""
    siblings = cpu_list(CPU0 / "topology" / "thread_siblings_list") or {0}
    private = [size for size, shared in _caches() if shared is not None and shared <= siblings]
    return max(private, default=0) or 2 * 2**20


def _caches() -> Iterator[tuple[int, set[int] | None]]:
    """CPU 0's caches: (size in bytes, the CPUs sharing it or None where unknown)."""
    for index in (CPU0 / "cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            yield int(digits) * scale, cpu_list(index / "shared_cpu_list")


def cpu_list(path: Path) -> set[int] | None:
    """A sysfs CPU list ("0-3,8") as a set; None where it cannot be read."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus
