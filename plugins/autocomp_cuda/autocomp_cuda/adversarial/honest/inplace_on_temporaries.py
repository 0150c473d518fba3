# problem: L2/scale_bias_clamp_mul
# expect: ok
# gpu: false
# what: in-place operations on temporaries the candidate owns (not on inputs) are fine
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.a = nn.Parameter(torch.ones(cols))
        self.b = nn.Parameter(torch.zeros(cols))

    def forward(self, x, gate, residual):
        y = torch.addcmul(self.b, x, self.a)
        y.clamp_(-1.5, 2.0).mul_(gate).add_(residual)
        return y
