"""Scale -> add an additive mask -> softmax over the last dimension -> multiply by a value tensor."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 4096


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores, mask, values):
        p = torch.softmax(scores * self.scale + mask, dim=-1)
        return p * values


def get_inputs():
    shape = (ROWS, COLS)
    mask = torch.where(torch.rand(shape) < 0.2, -1e4, 0.0)
    return [torch.randn(shape) * 3.0, mask, torch.randn(shape) * 50.0]


def get_init_inputs():
    return [0.125]


AUTOCOMP = {"tiny": {"ROWS": 7, "COLS": 64}, "flops": "7*ROWS*COLS", "tags": ["softmax", "fusion"]}
