"""Index of the maximum along dimension 1; the output is int64 and must match exactly."""
import torch
import torch.nn as nn

D0 = 64
D1 = 1024
D2 = 2047


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(D0, D1, D2)]


def get_init_inputs():
    return [1]


AUTOCOMP = {"tiny": {"D0": 2, "D1": 19, "D2": 13}, "flops": "D0*D1*D2", "tags": ["reduction", "integer"]}
