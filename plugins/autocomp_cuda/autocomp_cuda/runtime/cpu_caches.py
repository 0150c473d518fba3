"""The CPU's cache sizes, from sysfs: what the cache flush between timed calls must cover."""

from __future__ import annotations

from pathlib import Path


def core_cache_bytes() -> int:
    """Size of the largest cache private to one core (CPU 0's, shared with no other CPU but
    its SMT sibling): what a timed call on one thread can keep between calls. Flushing the
    shared last level instead costs ~1 GB of writes a call on a large server CPU, noise
    larger than the work timed."""
    best = 0
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    siblings = cpu_list(Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"))
    for index in base.glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        shared = cpu_list(index / "shared_cpu_list")
        if shared is None or not shared <= (siblings or {0}):
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 2 * 2**20


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
