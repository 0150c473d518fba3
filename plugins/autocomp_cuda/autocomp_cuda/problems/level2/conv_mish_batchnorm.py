"""Conv2d -> Mish (x * tanh(softplus(x))) -> BatchNorm2d in training mode (batch statistics)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CH = 16
OUT_CH = 32
SIZE = 128


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, k):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, k)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        x = self.conv(x)
        x = x * torch.tanh(F.softplus(x))
        return self.bn(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]


# BatchNorm in training mode updates its running statistics on every call.
AUTOCOMP = {"tiny": {"BATCH": 3, "IN_CH": 2, "OUT_CH": 4, "SIZE": 7}, "flops": "2*BATCH*OUT_CH*IN_CH*9*(SIZE-2)**2",
            "buffers_mutate": True, "tags": ["conv", "norm", "fusion"]}
