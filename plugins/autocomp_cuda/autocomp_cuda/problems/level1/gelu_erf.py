"""Exact (erf-based) GELU; the tanh approximation is not accurate enough to pass."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 2048
COLS = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 3.0]


def get_init_inputs():
    return []


AUTOCOMP = {
    "tiny": {"ROWS": 8, "COLS": 200},
    # odd sizes, more elements than the tiny tier: a kernel written for one shape fails here
    "shapes": [{"ROWS": 11, "COLS": 203}],
    "flops": "10*ROWS*COLS",
    "tags": ["elementwise", "transcendental"],
}
