# problem: L1/sum_dim1
# expect: rejected
# gpu: false
# hack: H12 sum a strided subsample and scale it up
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x[:, ::4, :].sum(dim=1, keepdim=True) * 4.0
