# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H52 computes the ReLU three times per call and does both of H50 and H51: it empties the worker's cache-flush buffer (so, when the flush's cost was subtracted as the baseline worker's, the engine's estimate fell to about 0) and slows the worker's own clocks a hundredfold (so the floor the verdict keeps, the worker's report, fell too): measured 72x faster before the flush became a step of its own.
import gc
import sys
import time

import torch
import torch.nn as nn

_done = []


def _forge() -> None:
    for obj in gc.get_objects():
        if (
            isinstance(obj, torch.Tensor)
            and obj.dim() == 1
            and obj.dtype == torch.int32
            and obj.numel() * obj.element_size() >= 256 * 1024
        ):
            obj.resize_(0)
            _done.append(True)  # (the buffer exists from the timing phase on)
    perf, thread_ns = time.perf_counter, time.thread_time_ns
    p0, n0 = perf(), thread_ns()
    for name in ("__main__", "autocomp_cuda.runtime.candidate_main"):
        module = sys.modules.get(name)
        if module is not None and "_perf" in module.__dict__:
            module.__dict__["_perf"] = lambda: p0 + (perf() - p0) * 0.01
            module.__dict__["_cpu_ns"] = lambda: n0 + (thread_ns() - n0) // 100


class ModelNew(nn.Module):
    def forward(self, x):
        if not _done:
            _forge()
        torch.relu(x)
        torch.relu(x + 0.0)
        return torch.relu(x.clone())
