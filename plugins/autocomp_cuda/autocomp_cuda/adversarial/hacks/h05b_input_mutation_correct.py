# problem: L1/relu
# expect: rejected
# gpu: false
# hack: H5 a correct answer computed in place into the input (writes are refused unless declared)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.relu_().clone()
