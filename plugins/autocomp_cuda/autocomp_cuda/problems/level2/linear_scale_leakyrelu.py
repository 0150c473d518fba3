"""Linear -> multiply by a constant -> LeakyReLU(0.1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
IN_F = 4096
OUT_F = 4096


class Model(nn.Module):
    def __init__(self, in_f, out_f, scale, slope):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.scale = scale
        self.slope = slope

    def forward(self, x):
        return F.leaky_relu(self.fc(x) * self.scale, self.slope)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F, 2.0, 0.1]


AUTOCOMP = {"tiny": {"BATCH": 4, "IN_F": 24, "OUT_F": 20}, "flops": "2*BATCH*IN_F*OUT_F", "tags": ["gemm", "fusion"]}
