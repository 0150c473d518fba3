# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H30f returns an empty tensor from its timed calls (nothing computed: a call costs next to nothing) and does the work afterwards: a TorchFunctionMode runs inside the worker's own checks after each call, finds the room the worker copied that call's output into (the garbage collector lists every tensor) and writes the true product there before anything reads it. The output the judge reads is right; the call that was timed computed nothing.
import gc

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

_state = {"pending": None, "busy": False}


def _fix():
    inputs, fake = _state["pending"]
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj.dim() == 3 and obj.shape[1:] == fake.shape:
            for room in obj:  # the slot still holding the empty output
                if torch.equal(room, fake):
                    room.copy_(torch.matmul(*inputs))
                    _state["pending"] = None
                    return


class _After(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if _state["pending"] is not None and not _state["busy"]:
            _state["busy"] = True
            try:
                with torch.no_grad():
                    _fix()
            finally:
                _state["busy"] = False
        return result


_After().__enter__()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        if self.calls <= 8:  # the trials and the warm-up: honest
            return torch.matmul(a, b)
        _state["busy"] = True
        fake = torch.zeros(a.shape[0], b.shape[1])
        _state["pending"] = ((a.clone(), b.clone()), fake)
        _state["busy"] = False
        return fake
