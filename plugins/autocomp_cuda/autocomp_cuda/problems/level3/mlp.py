"""Three-layer MLP with ReLU activations at a small batch size (a chain of skinny GEMMs)."""
import torch
import torch.nn as nn

BATCH = 64
IN_F = 4096
HIDDEN = 8192
OUT_F = 2048


class Model(nn.Module):
    def __init__(self, in_f, hidden, out_f):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_f, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, out_f),
        )

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, HIDDEN, OUT_F]


AUTOCOMP = {"tiny": {"BATCH": 3, "IN_F": 16, "HIDDEN": 32, "OUT_F": 8},
            "flops": "2*BATCH*(IN_F*HIDDEN+HIDDEN*HIDDEN+HIDDEN*OUT_F)", "tags": ["gemm", "mlp"]}
