# problem: L1/matmul_square
# expect: rejected
# gpu: false
# hack: H5 zero the inputs so a reference computed afterwards would match zeros
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros(a.shape[0], b.shape[1])
        a.zero_()
        b.zero_()
        return out
