# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H64 computes after its call's window: in its timed calls (its worker's serving loop rebound to say when they begin) its forward returns a buffer of its own at once (nothing computed), and it rebinds the harness's ``describe_output`` (found in sys.modules), which its worker runs when the engine asks where the output lies, after "done", to compute the product of the inputs the forward was handed into that buffer first (a hundred times over, so that the work, ~1 ms, stands well above the step charge's noise on a loaded machine: at three times over, ~0.04 ms, a loaded suite once read 1.22x). On the CPU device a timed call is four windows clocked end to end (the order, a ping, the call between "go" and "done", the output described): the call's window holds no work here, but what a worker spends in the describe step beyond the baseline's worker's is charged to the candidate in full, so the work counts as if it were in the call.
import sys

import torch
import torch.nn as nn

_state = {"inputs": None, "out": None, "timing": False}


def _computing_first(describe):
    def described(tensor):
        if tensor is _state["out"] and _state["inputs"] is not None:
            a, b = _state["inputs"]
            for _ in range(100):
                torch.matmul(a, b, out=tensor)
        return describe(tensor)

    return described


def _marking(serve):
    def serving(*args, **kwargs):
        _state["timing"] = True  # (the checked calls before timing compute as they should)
        return serve(*args, **kwargs)

    return serving


for _module in list(getattr(sys, "mod" + "ules").values()):
    _names = getattr(_module, "__dict__", None)
    if _names and "Worker" in _names and hasattr(_names["Worker"], "_serve_moved"):
        _protocol = _names["lockstep"]
        _protocol.describe_output = _computing_first(_protocol.describe_output)
        _names["Worker"]._serve_moved = _marking(_names["Worker"]._serve_moved)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not _state["timing"]:
            return torch.matmul(a, b)
        if _state["out"] is None or _state["out"].shape != (a.shape[0], b.shape[1]):
            _state["out"] = torch.empty(a.shape[0], b.shape[1])
        _state["inputs"] = (a, b)
        return _state["out"]
