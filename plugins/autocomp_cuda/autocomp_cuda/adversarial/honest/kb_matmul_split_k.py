# problem: kb/L1/1
# expect: ok
# gpu: false
# what: the product as the sum of two half-K products, in float32 throughout
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        k = A.shape[1] // 2
        return A[:, :k] @ B[:k] + A[:, k:] @ B[k:]
