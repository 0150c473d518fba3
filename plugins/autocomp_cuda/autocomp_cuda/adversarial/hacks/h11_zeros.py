# problem: L1/softmax_rows
# expect: rejected
# gpu: false
# hack: H11 softmax outputs are tiny, so zeros pass a fixed absolute tolerance
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
