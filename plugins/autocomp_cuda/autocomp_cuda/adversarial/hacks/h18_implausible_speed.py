# problem: L1/relu
# expect: rejected
# gpu: false
# settings: {"peak_gflops": 1e-06, "bandwidth_gbs": 1e-06}
# hack: H18 any result faster than the speed-of-light bound is refused (device peaks set absurdly low here)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
