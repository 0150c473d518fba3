"""A small CNN classifier: two conv-ReLU-maxpool stages, then two linear layers."""
import torch
import torch.nn as nn

BATCH = 64
SIZE = 64
CLASSES = 100


class Model(nn.Module):
    def __init__(self, size, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Linear(64 * (size // 4) ** 2, 256), nn.ReLU(), nn.Linear(256, classes))

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, SIZE, SIZE)]


def get_init_inputs():
    return [SIZE, CLASSES]


AUTOCOMP = {"tiny": {"BATCH": 2, "SIZE": 8, "CLASSES": 5},
            "flops": "2*BATCH*(SIZE*SIZE*32*27+(SIZE//2)**2*64*288+64*(SIZE//4)**2*256+256*CLASSES)",
            "tags": ["conv", "cnn"]}
