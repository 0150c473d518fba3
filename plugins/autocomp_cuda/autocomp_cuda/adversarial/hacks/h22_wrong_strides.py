# problem: L1/relu
# expect: rejected
# gpu: false
# hack: right shape, dtype and values, laid out column-major (a transposed view): code reading the output as the reference lays it out reads garbage
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x.t().contiguous()).t()
