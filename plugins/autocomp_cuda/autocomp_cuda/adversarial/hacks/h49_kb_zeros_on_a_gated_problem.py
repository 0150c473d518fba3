# problem: kb/L2/80
# expect: rejected
# gpu: false
# hack: zeros on a problem whose output is zero whatever the input (L2/80's pattern): the gate refuses the problem, but `eval` and `optimize` judged programs on it anyway and accepted this one
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, max_dim):
        super().__init__()
        self.out = 1

    def forward(self, x):
        return torch.zeros(x.shape[0], self.out, device=x.device)
