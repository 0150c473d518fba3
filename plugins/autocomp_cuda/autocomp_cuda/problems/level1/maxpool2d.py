"""2D max pooling, kernel 3, stride 2, padding 1."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
SIZE = 256


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE) - 0.5]


def get_init_inputs():
    return [3, 2, 1]


AUTOCOMP = {"tiny": {"BATCH": 2, "CHANNELS": 3, "SIZE": 11}, "flops": "9*BATCH*CHANNELS*SIZE*SIZE//4", "tags": ["pooling", "window"]}
