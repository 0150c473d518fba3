# problem: L3/transformer_block
# expect: rejected
# gpu: false
# hack: H32 normalizes with both LayerNorms but never applies their weight and bias. Those start as 1 and 0, and only imported KernelBench problems had constant-initialised weights re-drawn for the trials, so on the suite's own problems every output was right; with any trained LayerNorm the block is wrong.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
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
        eps = self.ln1.eps
        x = x + self.attention(F.layer_norm(x, x.shape[-1:], eps=eps))
        h = F.layer_norm(x, x.shape[-1:], eps=eps)
        return x + self.fc2(F.gelu(self.fc1(h), approximate="tanh"))
