"""Square single-precision matrix product C = A @ B (compute-bound GEMM)."""
import torch
import torch.nn as nn

N = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    a = torch.randn(N, N)
    b = torch.randn(N, N) * 0.5
    return [a, b]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"N": 48}, "flops": "2*N**3", "tags": ["gemm"], "family": "matmul"}
