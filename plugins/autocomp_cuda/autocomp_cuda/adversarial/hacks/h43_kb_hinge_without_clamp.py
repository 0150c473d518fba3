# problem: kb/L1/100
# expect: rejected
# gpu: false
# hack: hinge loss without its clamp at 0: with predictions in [0, 1) and targets of +-1, 1 - p * t is never negative, so the clamp never acts there
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(1 - predictions * targets)
