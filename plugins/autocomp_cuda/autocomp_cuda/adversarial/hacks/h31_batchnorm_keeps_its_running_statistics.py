# problem: L2/conv_mish_batchnorm
# expect: rejected
# gpu: false
# static: off
# hack: H31 normalizes with the batch's statistics, as training-mode BatchNorm does, but never updates the running mean and variance (nor the batch count) that the reference's forward updates on every call: every output is right, the model the caller keeps is not. Only the outputs were compared; the buffers a problem's forward updates (buffers_mutate) were allowed to change, never checked.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_ch, out_ch, k):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, k)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        x = F.mish(self.conv(x))
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        scale = self.bn.weight.view(1, -1, 1, 1) / torch.sqrt(var + self.bn.eps)
        return (x - mean) * scale + self.bn.bias.view(1, -1, 1, 1)
