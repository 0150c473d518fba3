# problem: kb/L1/19
# expect: rejected
# gpu: false
# hack: ReLU as the identity: on [0, 1) inputs they agree; the quality gate refused the problem for it, but `eval` and `optimize` did not ask the gate
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()
