# problem: kb/L1/55
# expect: rejected
# gpu: false
# hack: convolves the first image of the batch only and repeats it: the CPU's budget shrinks this problem's batch to 1, where that is the whole batch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        first = self.conv(x[:1])
        return first.expand(x.shape[0], *first.shape[1:]).contiguous()
