# problem: kb/L1/40
# expect: ok
# gpu: false
# what: LayerNorm written out (two-pass variance), its weight and bias read from the same module names as the reference's
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        flat = x.reshape(x.shape[0], -1)
        mean = flat.mean(dim=1, keepdim=True)
        centred = flat - mean
        var = (centred * centred).mean(dim=1, keepdim=True)
        y = (centred * torch.rsqrt(var + self.ln.eps)).view_as(x)
        return y * self.ln.weight + self.ln.bias
