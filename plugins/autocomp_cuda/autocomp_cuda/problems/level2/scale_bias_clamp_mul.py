"""A chain of elementwise ops: x * a + b -> clamp -> multiply by a gate -> add a residual."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 8192


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.a = nn.Parameter(torch.randn(cols) * 0.5 + 1.0)
        self.b = nn.Parameter(torch.randn(cols) * 0.1)

    def forward(self, x, gate, residual):
        y = x * self.a + self.b
        y = torch.clamp(y, -1.5, 2.0)
        y = y * gate
        return y + residual


def get_inputs():
    shape = (ROWS, COLS)
    return [torch.randn(shape) * 2.0, torch.rand(shape) * 2.0 - 0.5, torch.randn(shape) * 0.3]


def get_init_inputs():
    return [COLS]


AUTOCOMP = {"tiny": {"ROWS": 64, "COLS": 256}, "flops": "6*ROWS*COLS", "tags": ["elementwise", "fusion"]}
