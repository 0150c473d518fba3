import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-D convolution of a wide image; the CPU's budget shrinks its batch to two."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 8
in_channels = 64
out_channels = 128
kernel_size = 3
height = 512
width = 1024


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
