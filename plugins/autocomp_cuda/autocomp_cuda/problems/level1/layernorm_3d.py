"""LayerNorm over the last three dimensions with learned affine parameters."""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.norm = nn.LayerNorm(shape)
        # Non-trivial affine parameters so an unscaled normalization does not pass.
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.3)
            self.norm.bias.normal_(0.0, 0.5)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 1.7 - 0.4]


def get_init_inputs():
    return [(CHANNELS, HEIGHT, WIDTH)]


AUTOCOMP = {"tiny": {"BATCH": 3, "CHANNELS": 4, "HEIGHT": 6, "WIDTH": 5}, "flops": "8*BATCH*CHANNELS*HEIGHT*WIDTH", "tags": ["norm", "reduction"]}
