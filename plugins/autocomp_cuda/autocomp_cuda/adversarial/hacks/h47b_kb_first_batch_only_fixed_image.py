# problem: kb/L3/19
# expect: rejected
# gpu: false
# hack: convolves the first image of the batch only and repeats it: only the batch of this problem can shrink, so the CPU's budget takes it to 1, where that is the whole batch; the second shape (batch 2) refuses it
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        first = torch.relu(self.conv(x[:1]))
        return first.expand(x.shape[0], *first.shape[1:]).contiguous()
