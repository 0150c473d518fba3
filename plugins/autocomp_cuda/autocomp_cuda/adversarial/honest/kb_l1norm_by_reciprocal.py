# problem: kb/L1/38
# expect: ok
# gpu: false
# what: each row times the reciprocal of its mean absolute value
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * torch.reciprocal(x.abs().sum(dim=1, keepdim=True) / x.shape[1])
