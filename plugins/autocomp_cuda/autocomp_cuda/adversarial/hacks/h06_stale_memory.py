# problem: L1/relu
# expect: rejected
# gpu: false
# hack: H6 return uninitialized memory hoping it still holds a freed reference output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)
