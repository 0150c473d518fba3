"""Sum over the middle dimension with keepdim, odd sizes."""
import torch
import torch.nn as nn

D0 = 64
D1 = 2047
D2 = 1023


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    # A sparse set of large spikes: a sampled or analytical sum does not pass.
    x = torch.randn(D0, D1, D2)
    spikes = (torch.rand(D0, D1, D2) < 0.001).float() * torch.randn(D0, D1, D2) * 100.0
    return [x + spikes]


def get_init_inputs():
    return [1]


AUTOCOMP = {"tiny": {"D0": 3, "D1": 37, "D2": 11}, "flops": "D0*D1*D2", "tags": ["reduction"]}
