# problem: kb/L1/55
# expect: ok
# gpu: false
# what: the convolution as im2col (unfold) and one matmul over the whole batch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        k = self.conv.kernel_size[0]
        n, _, h, w = x.shape
        cols = F.unfold(x, k)  # (n, c*k*k, L)
        weight = self.conv.weight.reshape(self.conv.out_channels, -1)
        out = weight @ cols + self.conv.bias[:, None]
        return out.view(n, self.conv.out_channels, h - k + 1, w - k + 1)
