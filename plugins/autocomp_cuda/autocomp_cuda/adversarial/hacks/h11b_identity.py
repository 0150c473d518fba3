# problem: L1/relu
# expect: rejected
# gpu: false
# hack: H11 ReLU of non-negative inputs is the identity: return the input
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()
