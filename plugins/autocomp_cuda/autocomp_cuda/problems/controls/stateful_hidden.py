"""NEGATIVE CONTROL (must be refused): an RNN cell that keeps its hidden state in a plain attribute.

As KernelBench L3/33 (VanillaRNN): ``self.hidden`` is neither a parameter nor a buffer, so no
``load_state_dict`` resets it, and every forward replaces it. Each output depends only on the
call's own inputs (the initial hidden state is copied in first), so every output check passes;
only the model's plain attributes show that a call leaves state behind for the next.
"""

import torch
import torch.nn as nn

BATCH = 256
IN_F = 1024
HIDDEN = 1024
OUT_F = 512


class Model(nn.Module):
    def __init__(self, in_f, hidden, out_f):
        super().__init__()
        self.hidden = torch.randn(BATCH, hidden)
        self.i2h = nn.Linear(in_f + hidden, hidden)
        self.h2o = nn.Linear(hidden, out_f)

    def forward(self, x, initial_hidden):
        self.hidden.copy_(initial_hidden)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.rand(BATCH, IN_F), torch.rand(BATCH, HIDDEN)]


def get_init_inputs():
    return [IN_F, HIDDEN, OUT_F]


AUTOCOMP = {"tiny": {"BATCH": 8, "IN_F": 32, "HIDDEN": 32, "OUT_F": 16}, "control": "stateful"}
