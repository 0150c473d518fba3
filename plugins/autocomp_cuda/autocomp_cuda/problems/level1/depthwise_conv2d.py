"""Depthwise 3x3 convolution with padding 1 (memory-bound)."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
SIZE = 256


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE) * 0.8]


def get_init_inputs():
    return [CHANNELS]


AUTOCOMP = {"tiny": {"BATCH": 2, "CHANNELS": 4, "SIZE": 10}, "flops": "18*BATCH*CHANNELS*SIZE*SIZE", "tags": ["conv", "depthwise"]}
