# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H3 a tensor subclass that only computes when the harness looks at it
import torch
import torch.nn as nn


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args = [torch.relu(a.as_subclass(torch.Tensor)) if isinstance(a, Lazy) else a for a in args]
        return func(*args, **kwargs)


class ModelNew(nn.Module):
    def forward(self, x):
        return x.as_subclass(Lazy)
