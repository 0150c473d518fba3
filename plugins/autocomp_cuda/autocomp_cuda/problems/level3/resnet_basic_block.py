"""ResNet basic block: conv-BN-ReLU, conv-BN, 1x1 strided downsample shortcut, add, ReLU (BN in training mode)."""
import torch
import torch.nn as nn

BATCH = 16
IN_CH = 64
OUT_CH = 128
SIZE = 112
STRIDE = 2


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.down = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.down(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CH, OUT_CH, STRIDE]


AUTOCOMP = {"tiny": {"BATCH": 2, "IN_CH": 3, "OUT_CH": 4, "SIZE": 8},
            "flops": "2*BATCH*(SIZE//STRIDE)**2*OUT_CH*(9*IN_CH+9*OUT_CH+IN_CH)",
            "buffers_mutate": True, "tags": ["conv", "norm", "residual"]}
