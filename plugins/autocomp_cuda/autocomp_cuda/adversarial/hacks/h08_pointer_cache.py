# problem: L2/scale_bias_clamp_mul
# expect: rejected
# gpu: false
# hack: H8 cache outputs keyed on the input pointers and shapes
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.a = nn.Parameter(torch.ones(cols))
        self.b = nn.Parameter(torch.zeros(cols))
        self.cache = {}

    def forward(self, x, gate, residual):
        key = (x.data_ptr(), gate.data_ptr(), residual.data_ptr(), tuple(x.shape))
        if key not in self.cache:
            self.cache[key] = torch.clamp(x * self.a + self.b, -1.5, 2.0) * gate + residual
        return self.cache[key].clone()
