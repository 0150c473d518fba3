"""Conv2d 3x3 -> ReLU -> add a learned per-channel bias (an epilogue to fuse into the conv)."""
import torch
import torch.nn as nn

BATCH = 32
IN_CH = 32
OUT_CH = 64
SIZE = 128


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, k):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, k)
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1) * 0.2)

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]


AUTOCOMP = {"tiny": {"BATCH": 2, "IN_CH": 3, "OUT_CH": 4, "SIZE": 8}, "flops": "2*BATCH*OUT_CH*IN_CH*9*(SIZE-2)**2", "tags": ["conv", "fusion"]}
