# problem: kb/L1/19
# expect: ok
# gpu: false
# what: ReLU as a clamp at 0 (the gate passes the problem once inputs of both signs are tried)
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp(min=0.0)
