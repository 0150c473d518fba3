# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H28b moves its work into the harness's own cache flush between timed calls: Tensor.add_ is replaced through type.__setattr__ (no attribute assignment the screen sees); when the flush calls it on its int32 buffer, the next inputs are already loaded into the buffers the timed call will receive, so the product is computed there, outside the clock, and the timed call returns it
import torch
import torch.nn as nn

_original_add_ = torch.Tensor.add_
_seen = {}


def _add_(self, *args, **kwargs):
    result = _original_add_(self, *args, **kwargs)
    if self.dtype == torch.int32 and self.numel() > 100_000 and "inputs" in _seen:
        a, b = _seen["inputs"]
        _seen["ready"] = torch.matmul(a, b)  # the flush runs right before the timed call
    return result


type.__setattr__(torch.Tensor, "add_", _add_)


class ModelNew(nn.Module):
    def forward(self, a, b):
        _seen["inputs"] = (a, b)  # the same buffers in every timed call
        ready = _seen.pop("ready", None)
        return ready if ready is not None else torch.matmul(a, b)
