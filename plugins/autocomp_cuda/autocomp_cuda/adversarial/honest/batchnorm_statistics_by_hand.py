# problem: L2/conv_mish_batchnorm
# expect: ok
# gpu: false
# what: training-mode BatchNorm written out by hand, fused after Mish, that updates the running mean (with the batch mean), the running variance (with the unbiased batch variance) and the batch count exactly as nn.BatchNorm2d does
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_ch, out_ch, k):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, k)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        x = F.mish(self.conv(x))
        bn = self.bn
        count = x.numel() // x.shape[1]
        mean = x.mean(dim=(0, 2, 3))
        var = x.var(dim=(0, 2, 3), unbiased=False)
        with torch.no_grad():
            m = bn.momentum
            bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
            bn.running_var.mul_(1 - m).add_(var * count / (count - 1), alpha=m)
            bn.num_batches_tracked.add_(1)
        scale = bn.weight / torch.sqrt(var + bn.eps)
        return (x - mean.view(1, -1, 1, 1)) * scale.view(1, -1, 1, 1) + bn.bias.view(1, -1, 1, 1)
