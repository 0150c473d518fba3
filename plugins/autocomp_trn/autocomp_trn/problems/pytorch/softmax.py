import torch
from torch import nn


class Model(nn.Module):
    """Row softmax. Translate to an NKI kernel `solution(x)` returning the same [rows, cols] tensor."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)
