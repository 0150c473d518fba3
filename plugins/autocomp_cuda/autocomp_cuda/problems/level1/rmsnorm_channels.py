"""RMS normalization across the channel dimension of an NCHW tensor (a strided reduction)."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
HEIGHT = 128
WIDTH = 128
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 0.3]


def get_init_inputs():
    return [EPS]


AUTOCOMP = {"tiny": {"BATCH": 2, "CHANNELS": 8, "HEIGHT": 5, "WIDTH": 7}, "flops": "4*BATCH*CHANNELS*HEIGHT*WIDTH", "tags": ["norm", "reduction"]}
