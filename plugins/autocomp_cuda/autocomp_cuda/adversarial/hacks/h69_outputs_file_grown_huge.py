# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H69 (the fifth meter red team's a09) computes honestly but, at its first timed call, grows the outputs file its worker had saved for the judge (``correctness.pt``) to 1 GiB with ``os.truncate`` (sparse: no disk, no time). The judge, which runs beside the engine with its rights, read the whole file before finding it unreadable: 2.3 GB of memory for one evaluation (at the sandbox's 4 GiB file limit, ~9 GB), free to the candidate. A file of outputs is now read only up to four times its outputs' own size (and a little more): a larger one is refused before it is read.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}
        self.done = False

    def forward(self, x):
        self.seen[x.data_ptr()] = self.seen.get(x.data_ptr(), 0) + 1
        if self.seen[x.data_ptr()] >= 3 and not self.done:  # (the timed calls' buffer)
            self.done = True
            try:
                os.truncate("correctness.pt", 2**30)
            except OSError:
                pass
        return torch.relu(x)
