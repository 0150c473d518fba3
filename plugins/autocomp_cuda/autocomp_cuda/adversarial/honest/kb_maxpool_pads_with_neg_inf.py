# problem: kb/L1/42
# expect: ok
# gpu: false
# what: the padding made explicit (-inf, as max-pooling pads), then an unpadded pool
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        padded = F.pad(x, (self.p,) * 4, value=float("-inf"))
        return F.max_pool2d(padded, self.k, self.s, 0, self.d)
