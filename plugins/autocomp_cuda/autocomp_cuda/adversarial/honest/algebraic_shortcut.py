# problem: L2/linear_scale_residual
# expect: ok
# gpu: false
# what: y*s + y.detach() is y*(s+1) in a forward pass: fold the factor into one addmm
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_f, out_f, scale):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.scale = scale

    def forward(self, x):
        factor = self.scale + 1.0
        return torch.addmm(self.fc.bias, x, self.fc.weight.t(), beta=factor, alpha=factor)
