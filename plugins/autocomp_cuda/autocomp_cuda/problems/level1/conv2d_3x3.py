"""Standard 2D convolution, 3x3, no padding, no bias."""
import torch
import torch.nn as nn

BATCH = 8
IN_CH = 16
OUT_CH = 64
SIZE = 256


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, k):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, k, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]


AUTOCOMP = {"tiny": {"BATCH": 2, "IN_CH": 3, "OUT_CH": 5, "SIZE": 9}, "flops": "2*BATCH*OUT_CH*IN_CH*9*(SIZE-2)**2", "tags": ["conv"]}
