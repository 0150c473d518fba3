"""What one evaluation holds while it runs, and how many evaluations fit at once.

A backend describes one evaluation in the units cluster schedulers use: CPU cores, memory,
GPUs and named custom resources (``neuron_cores``, ``spike_slots``, a board). On one
machine the engine divides what the machine has by what one evaluation needs; a scale-out
executor (``autocomp_register_executors``) turns the same numbers into its own resource
requests (Ray: ``num_cpus``, ``memory``, ``num_gpus``, ``resources``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

CPUS, MEMORY_MB, GPUS = "cpus", "memory_mb", "gpus"


@dataclass(frozen=True)
class Resources:
    """One evaluation's needs (``cpus``, ``memory_mb``, ``gpus``, ``custom``) and what this
    machine offers that the engine cannot see for itself (``available``)."""

    #: CPU cores one evaluation keeps busy (fractions allowed: a remote board needs little)
    cpus: float = 1.0
    #: peak memory of one evaluation, in MB
    memory_mb: int = 1024
    #: GPUs one evaluation holds (fractions share one)
    gpus: float = 0.0
    #: other named resources one evaluation holds, e.g. ``{"neuron_cores": 1}``
    custom: Mapping[str, float] = field(default_factory=dict)
    #: GPUs (key ``gpus``) and named resources on this machine, usually from the hardware
    #: config (``gpus = [0, 1]`` offers 2). The engine measures CPUs and memory itself.
    available: Mapping[str, float] = field(default_factory=dict)
    #: evaluations at once on this machine, when the backend schedules its devices itself
    #: (the CUDA harness overlaps builds with timing that it serializes per GPU); None: the
    #: engine works it out from the needs above. Executors that place work on a cluster
    #: ignore it and ``available``: the cluster knows its own capacity.
    parallel: int | None = None

    def __post_init__(self) -> None:
        for name, amount in self.needs().items():
            if amount < 0 or (name in (CPUS, MEMORY_MB) and amount == 0):
                raise ValueError(f"Resources.{name} must be positive, got {amount}")
        if self.parallel is not None and self.parallel < 1:
            raise ValueError(f"Resources.parallel must be at least 1, got {self.parallel}")

    def needs(self) -> dict[str, float]:
        """One evaluation's needs, keyed like a capacity: cpus, memory_mb, gpus, custom names."""
        return {CPUS: self.cpus, MEMORY_MB: self.memory_mb, GPUS: self.gpus, **self.custom}

    def fit(self, capacity: Mapping[str, float]) -> dict[str, int]:
        """Per needed resource, how many evaluations ``capacity`` holds (0: not even one)."""
        return {
            name: math.floor(capacity.get(name, 0) / need + 1e-9)
            for name, need in self.needs().items()
            if need > 0
        }


def machine_capacity() -> dict[str, float]:
    """The CPUs this process may use and the machine's physical memory (MB)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    return {CPUS: float(cpus or 1), MEMORY_MB: float(memory)}


def local_slots(resources: Resources, capacity: Mapping[str, float] | None = None) -> int:
    """Evaluations to run at once on this machine. CPUs and memory only slow a too-small
    machine down (one evaluation always runs); a GPU or named resource the machine does
    not offer is an error (ValueError naming it)."""
    if resources.parallel is not None:
        return resources.parallel
    capacity = {**(capacity or machine_capacity()), **resources.available}
    counts = resources.fit(capacity)
    for name, count in counts.items():
        if count == 0 and name not in (CPUS, MEMORY_MB):
            raise ValueError(
                f"one evaluation needs {resources.needs()[name]:g} {name}, and this "
                f"machine offers {capacity.get(name, 0):g} (say how many in the "
                "hardware config)"
            )
    return max(1, min(counts.values()))
