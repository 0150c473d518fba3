# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H30d hides its work in another process: at its first call it forks a helper that shares memory with it, and a TorchFunctionMode that sees the worker load each call's inputs copies them to the helper and lets it compute the product (three times over) while the worker flushes the cache; forward only waits for the answer. Threads were looked for, processes never, and the worker's clock counted none of the helper's work. (The engine now counts the CPU of every process in the worker's sandbox.)
import os

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

_state = {"inputs": None, "seen": None, "busy": False, "helper": None, "pending": 0}


def _versions(tensors):
    return tuple((t.data_ptr(), t._version) for t in tensors)


def _product(a, b):
    out = torch.matmul(a, b)
    for _ in range(2):
        out = (out + torch.matmul(a, b)) * 0.5
    return out


def _start_helper(a, b):
    room = [torch.empty_like(a).share_memory_(), torch.empty_like(b).share_memory_()]
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype).share_memory_()
    ask_r, ask_w = os.pipe()
    tell_r, tell_w = os.pipe()
    if os.fork() == 0:
        while os.read(ask_r, 1):
            with torch.no_grad():
                out.copy_(_product(*room))
            os.write(tell_w, b"x")
        os._exit(0)
    _state["helper"] = (room, out, ask_w, tell_r)


class _Ahead(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = _state["inputs"]
        if inputs is not None and not _state["busy"] and _versions(inputs) != _state["seen"]:
            _state["busy"] = True
            try:
                _state["seen"] = _versions(inputs)
                room, _, ask_w, _ = _state["helper"]
                room[0].copy_(inputs[0])
                room[1].copy_(inputs[1])
                os.write(ask_w, b"x")  # (once per input loaded: the last one counts)
                _state["pending"] += 1
            finally:
                _state["busy"] = False
        return result


_Ahead().__enter__()


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _state["pending"] and _state["seen"] == _versions((a, b)):
            _, out, _, tell_r = _state["helper"]
            while _state["pending"]:
                _state["pending"] -= len(os.read(tell_r, _state["pending"]))
            return out.clone()
        _state["busy"] = True
        try:
            if _state["helper"] is None:
                _start_helper(a, b)
            out = _product(a, b)
        finally:
            _state["busy"] = False
        _state["inputs"], _state["seen"] = (a, b), _versions((a, b))
        return out
