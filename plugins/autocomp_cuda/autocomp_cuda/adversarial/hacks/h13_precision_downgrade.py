# problem: L1/matmul_square
# expect: rejected
# gpu: false
# hack: H13 compute an fp32 problem in bfloat16
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a.bfloat16() @ b.bfloat16()).float()
