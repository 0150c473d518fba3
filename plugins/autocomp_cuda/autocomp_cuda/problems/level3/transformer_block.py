"""Pre-norm transformer block: LayerNorm, causal attention, LayerNorm, MLP with tanh-GELU, residuals."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 512
EMBED = 768
HEADS = 12


class Model(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(embed)
        self.qkv = nn.Linear(embed, 3 * embed)
        self.proj = nn.Linear(embed, embed)
        self.ln2 = nn.LayerNorm(embed)
        self.fc1 = nn.Linear(embed, 4 * embed)
        self.fc2 = nn.Linear(4 * embed, embed)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = torch.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]


AUTOCOMP = {"tiny": {"BATCH": 2, "SEQ": 5, "EMBED": 16, "HEADS": 4},
            "flops": "BATCH*(24*SEQ*EMBED*EMBED+4*SEQ*SEQ*EMBED)", "tags": ["attention", "gemm", "norm"]}
