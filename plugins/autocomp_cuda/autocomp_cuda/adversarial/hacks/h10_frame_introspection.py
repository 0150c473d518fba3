# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H10 walk the caller frames looking for the reference output
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        frame = sys._getframe(1)
        while frame is not None:
            for name, value in frame.f_locals.items():
                if name in ("ref", "reference", "expected", "out64") and isinstance(value, torch.Tensor):
                    return value.clone()
            frame = frame.f_back
        return torch.zeros_like(x)
