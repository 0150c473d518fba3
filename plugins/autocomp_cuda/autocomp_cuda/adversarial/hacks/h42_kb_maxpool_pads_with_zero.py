# problem: kb/L1/42
# expect: rejected
# gpu: false
# hack: max-pool padded with 0 instead of -inf: no window's maximum is below 0 on [0, 1) inputs, so the padding never wins there
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        padded = F.pad(x, (self.p,) * 4, value=0.0)
        return F.max_pool2d(padded, self.k, self.s, 0, self.d)
