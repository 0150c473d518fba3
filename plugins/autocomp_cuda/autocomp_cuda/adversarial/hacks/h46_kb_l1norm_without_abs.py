# problem: kb/L1/38
# expect: rejected
# gpu: false
# hack: an L1 normalisation that divides by the mean of x instead of the mean of |x|: the same thing for non-negative inputs
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x / torch.mean(x, dim=1, keepdim=True)
