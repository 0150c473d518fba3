"""NEGATIVE CONTROL (must be refused): Linear -> row max (keepdim) -> minus its own mean -> GELU.

The max over dim 1 leaves one column, whose mean is itself, so the output is always zero.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
IN_F = 2048
OUT_F = 2048


class Model(nn.Module):
    def __init__(self, in_f, out_f):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)

    def forward(self, x):
        x = torch.max(self.fc(x), dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F]


AUTOCOMP = {"tiny": {"BATCH": 4, "IN_F": 16, "OUT_F": 12}, "control": "degenerate"}
