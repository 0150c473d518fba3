# problem: L1/relu
# expect: rejected
# gpu: false
# hack: H2 a background thread finishes the work after forward returns
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)

        def work():
            torch.relu(x, out=out)
        threading.Thread(target=work).start()
        return out
