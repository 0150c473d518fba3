"""Linear -> Swish -> add a bias vector -> GroupNorm (a norm across columns after a GEMM)."""
import torch
import torch.nn as nn

BATCH = 8192
IN_F = 1024
OUT_F = 2048
GROUPS = 32


class Model(nn.Module):
    def __init__(self, in_f, out_f, groups):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.bias = nn.Parameter(torch.randn(out_f) * 0.1)
        self.norm = nn.GroupNorm(groups, out_f)

    def forward(self, x):
        x = self.fc(x)
        x = torch.sigmoid(x) * x
        return self.norm(x + self.bias)


def get_inputs():
    return [torch.randn(BATCH, IN_F) * 1.3]


def get_init_inputs():
    return [IN_F, OUT_F, GROUPS]


AUTOCOMP = {"tiny": {"BATCH": 5, "IN_F": 16, "OUT_F": 24, "GROUPS": 4}, "flops": "2*BATCH*IN_F*OUT_F", "tags": ["gemm", "norm", "fusion"]}
