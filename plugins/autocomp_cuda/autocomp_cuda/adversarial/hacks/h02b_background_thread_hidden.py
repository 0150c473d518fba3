# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H2 the same, with the static rules off: the runtime checks must catch it
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)

        def work():
            time.sleep(0.005)
            torch.relu(x, out=out)
        threading.Thread(target=work, daemon=True).start()
        return out
