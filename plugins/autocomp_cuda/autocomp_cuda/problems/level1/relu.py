"""ReLU on a large signed tensor (elementwise, memory-bound)."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    # Signed inputs with a per-trial scale: returning the input unchanged must not pass.
    scale = float(torch.empty(()).uniform_(0.5, 4.0))
    return [torch.randn(ROWS, COLS) * scale]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"ROWS": 16, "COLS": 96}, "flops": "ROWS*COLS", "tags": ["elementwise"]}
