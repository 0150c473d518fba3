# problem: kb/L1/35
# expect: ok
# gpu: false
# what: GroupNorm written out over (batch, group, rest), the affine per channel afterwards
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        n, c = x.shape[:2]
        g = x.reshape(n, self.gn.num_groups, -1)
        mean = g.mean(dim=2, keepdim=True)
        centred = g - mean
        var = (centred * centred).mean(dim=2, keepdim=True)
        y = (centred * torch.rsqrt(var + self.gn.eps)).view_as(x)
        shape = (1, c) + (1,) * (x.dim() - 2)
        return y * self.gn.weight.view(shape) + self.gn.bias.view(shape)
