"""Multi-layer LSTM followed by a linear head on the last time step; the initial state is an input."""
import torch
import torch.nn as nn

BATCH = 32
SEQ = 256
IN_F = 128
HIDDEN = 256
LAYERS = 4
OUT_F = 10


class Model(nn.Module):
    def __init__(self, in_f, hidden, layers, out_f):
        super().__init__()
        self.lstm = nn.LSTM(in_f, hidden, layers, batch_first=True)
        self.fc = nn.Linear(hidden, out_f)

    def forward(self, x, h0, c0):
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN_F), torch.randn(LAYERS, BATCH, HIDDEN) * 0.5,
            torch.randn(LAYERS, BATCH, HIDDEN) * 0.5]


def get_init_inputs():
    return [IN_F, HIDDEN, LAYERS, OUT_F]


AUTOCOMP = {"tiny": {"BATCH": 2, "SEQ": 4, "IN_F": 5, "HIDDEN": 6, "LAYERS": 2, "OUT_F": 3},
            "flops": "8*BATCH*SEQ*HIDDEN*(IN_F+HIDDEN+(LAYERS-1)*2*HIDDEN)", "tags": ["recurrent"]}
