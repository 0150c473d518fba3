# problem: L1/gelu_erf
# expect: rejected
# gpu: false
# static: off
# hack: H28d is the reference program itself, but makes what it is compared with slower: the eager baseline ran in the candidate's own process, so replacing torch.nn.functional.gelu with a version that does the work twice doubles the baseline's time (the candidate keeps the original for itself): a 2x "speed-up" from nothing
import torch
import torch.nn as nn
import torch.nn.functional as F

_gelu = F.gelu


def _slow_gelu(x, *args, **kwargs):
    _gelu(x, *args, **kwargs)
    _gelu(x, *args, **kwargs)
    return _gelu(x, *args, **kwargs)


setattr(F, "gelu", _slow_gelu)


class ModelNew(nn.Module):
    def forward(self, x):
        return _gelu(x)
