import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM, the maximum of each row, minus the mean of that one value, then GELU: zero,
    whatever the input (a degenerate problem the quality gate refuses)."""

    def __init__(self, in_features, out_features, max_dim):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.max_dim = max_dim

    def forward(self, x):
        x = self.gemm(x)
        x = torch.max(x, dim=self.max_dim, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return torch.nn.functional.gelu(x)


batch_size = 128
in_features = 512
out_features = 256
max_dim = 1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, max_dim]
