# problem: kb/L1/55
# expect: rejected
# gpu: false
# hack: convolves the first image of the batch only and repeats it: right at a batch of 1, which the CPU's budget once shrank this problem to; a batch now stops at 2 where the other sizes can shrink instead (h47b: a problem whose batch must go to 1)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        first = self.conv(x[:1])
        return first.expand(x.shape[0], *first.shape[1:]).contiguous()
