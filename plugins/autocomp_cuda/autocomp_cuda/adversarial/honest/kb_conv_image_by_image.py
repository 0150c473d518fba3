# problem: kb/L3/19
# expect: ok
# gpu: false
# what: the convolution one image at a time (right at any batch: it passes at the shrunk batch of 1 and at the second shape, 2)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        images = [F.conv2d(image[None], self.conv.weight, self.conv.bias, padding=1) for image in x]
        return torch.relu(torch.cat(images))
