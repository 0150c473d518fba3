"""Matrix product with sizes that are not multiples of any tile: (M x K) @ (K x N)."""
import torch
import torch.nn as nn

M = 3079
K = 1531
N = 2213


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(M, K) * 0.7 - 0.1, torch.randn(K, N)]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"M": 37, "K": 29, "N": 41}, "flops": "2*M*N*K", "tags": ["gemm", "tails"], "family": "matmul"}
