import torch
import torch.nn as nn


class Model(nn.Module):
    """Minimum over one dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.min(x, dim=self.dim)[0]


batch_size = 32
dim1 = 512
dim2 = 511


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
