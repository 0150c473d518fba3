"""Matrix-vector product y = A @ x with a long reduction (bandwidth-bound)."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS, 1)]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"ROWS": 24, "COLS": 300}, "flops": "2*ROWS*COLS", "tags": ["gemv", "memory-bound"]}
