"""Linear -> y * s + y.detach(): algebraically y * (s + 1) in a forward pass."""
import torch
import torch.nn as nn

BATCH = 8192
IN_F = 2048
OUT_F = 2048


class Model(nn.Module):
    def __init__(self, in_f, out_f, scale):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.scale = scale

    def forward(self, x):
        y = self.fc(x)
        return y * self.scale + y.detach()


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F, 0.5]


AUTOCOMP = {"tiny": {"BATCH": 6, "IN_F": 20, "OUT_F": 12}, "flops": "2*BATCH*IN_F*OUT_F", "tags": ["gemm", "fusion", "algebra"]}
