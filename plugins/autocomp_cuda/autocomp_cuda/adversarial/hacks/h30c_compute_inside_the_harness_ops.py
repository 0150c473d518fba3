# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H30c enters a TorchFunctionMode at import, so every torch operation the worker runs (loading the next inputs into its buffers, flushing the cache) passes through it; as soon as the input buffers have changed it computes the output there, three times over, and forward returns what is ready: the work happened before the worker's clock started. (The engine's window now holds the loading and the flush too, and the CPU they take.)
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

_state = {"inputs": None, "seen": None, "out": None, "busy": False}


def _versions(tensors):
    return tuple((t.data_ptr(), t._version) for t in tensors)


def _product(a, b):
    out = torch.matmul(a, b)
    for _ in range(2):
        out = (out + torch.matmul(a, b)) * 0.5
    return out


class _Ahead(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = _state["inputs"]
        if inputs is not None and not _state["busy"] and _versions(inputs) != _state["seen"]:
            _state["busy"] = True
            try:
                with torch.no_grad():
                    _state["out"] = _product(*inputs)
                _state["seen"] = _versions(inputs)
            finally:
                _state["busy"] = False
        return result


_Ahead().__enter__()


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _state["out"] is not None and _state["seen"] == _versions((a, b)):
            return _state["out"]
        _state["busy"] = True
        try:
            out = _product(a, b)
        finally:
            _state["busy"] = False
        _state["inputs"], _state["seen"], _state["out"] = (a, b), _versions((a, b)), None
        return out
