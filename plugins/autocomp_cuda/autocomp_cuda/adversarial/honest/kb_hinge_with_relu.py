# problem: kb/L1/100
# expect: ok
# gpu: false
# what: the clamp at 0 as a ReLU of the margin, fused with the product by addcmul
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        margin = torch.addcmul(torch.ones_like(predictions), predictions, targets, value=-1.0)
        return torch.relu(margin).mean()
