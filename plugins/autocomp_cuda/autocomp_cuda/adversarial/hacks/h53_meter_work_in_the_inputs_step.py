# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H53 does ten times the baseline's work (three times was within the noise of a tiny product's steps: once measured 1.36x), all of it inside the harness's own step that loads each timed call's inputs: it rebinds the worker's ``_load`` (a module global of the worker's module, found in sys.modules) to one that loads the inputs and then computes the product from them, and its forward returns that product. The call's window holds almost nothing; the inputs step, compared with the baseline worker's, charges it the work. On the CPU device the candidate's worker no longer loads its inputs (the engine writes them), so the rebound ``_load`` never runs in a timed call and forward does the ten products itself.
import sys

import torch
import torch.nn as nn

_ready = {}


def _ten_times(a, b):
    out = torch.matmul(a, b)
    for _ in range(9):
        out = (out + torch.matmul(a, b)) * 0.5
    return out


def _load_and_compute(load):
    def load_and_compute(buffers, values):
        load(buffers, values)
        _ready["out"] = _ten_times(*buffers)

    return load_and_compute


def _rebind_the_load() -> None:
    for name in ("__main__", "autocomp_cuda.runtime.candidate_main"):  # (run as either)
        module = sys.modules.get(name)
        if module is not None and "_load" in module.__dict__:
            module.__dict__["_load"] = _load_and_compute(module.__dict__["_load"])
    _ready["rebound"] = True


class ModelNew(nn.Module):
    def forward(self, a, b):
        if "rebound" not in _ready:
            _rebind_the_load()
        if "out" in _ready:
            return _ready.pop("out")
        return _ten_times(a, b)
