# problem: kb/L1/35
# expect: rejected
# gpu: false
# hack: GroupNorm computed per channel (an InstanceNorm with GroupNorm's affine): right only with one channel per group, which shrinking 32 channels in 8 groups down to 8 channels made it
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        return F.group_norm(x, x.shape[1], self.gn.weight, self.gn.bias, self.gn.eps)
