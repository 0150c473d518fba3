# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H51 does three times the baseline's work per call and, at its first call, rebinds the clocks the worker bound before importing it (the module globals ``_perf`` and ``_cpu_ns`` of the worker's module, found in sys.modules) to clocks that run at a hundredth of the speed, so what the worker reports of its calls is near 0: the verdict never goes below that report, which is safe only while the engine's own measure cannot be pushed down.
import sys
import time

import torch
import torch.nn as nn

_slowed = []


def _slow_the_worker_clocks() -> None:
    perf, thread_ns = time.perf_counter, time.thread_time_ns
    p0, n0 = perf(), thread_ns()
    for name in ("__main__", "autocomp_cuda.runtime.candidate_main"):
        module = sys.modules.get(name)
        if module is None:
            continue
        if "_perf" in module.__dict__:
            module.__dict__["_perf"] = lambda: p0 + (perf() - p0) * 0.01
        if "_cpu_ns" in module.__dict__:
            module.__dict__["_cpu_ns"] = lambda: n0 + (thread_ns() - n0) // 100
    _slowed.append(True)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not _slowed:
            _slow_the_worker_clocks()
        out = torch.matmul(a, b)
        for _ in range(2):  # the same product twice more: three times the work
            out = (out + torch.matmul(a, b)) * 0.5
        return out
