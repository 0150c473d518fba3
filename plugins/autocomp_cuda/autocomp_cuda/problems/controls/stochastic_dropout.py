"""NEGATIVE CONTROL (must be refused): Linear -> live dropout (training mode) -> softmax.

Dropout draws a new mask on every call, so the reference is not deterministic.
"""
import torch
import torch.nn as nn

BATCH = 1024
IN_F = 1024
OUT_F = 8192


class Model(nn.Module):
    def __init__(self, in_f, out_f, p):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return torch.softmax(self.drop(self.fc(x)), dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F, 0.2]


AUTOCOMP = {"tiny": {"BATCH": 4, "IN_F": 16, "OUT_F": 32}, "control": "stochastic"}
