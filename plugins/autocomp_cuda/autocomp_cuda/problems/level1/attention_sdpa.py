"""Scaled dot-product attention without a mask (the flash-attention pattern)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 16
SEQ = 1024
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"BATCH": 1, "HEADS": 2, "SEQ": 9, "HEAD_DIM": 8}, "flops": "4*BATCH*HEADS*SEQ*SEQ*HEAD_DIM", "tags": ["attention"]}
