import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    """The MLP block of a Llama decoder layer at prefill: RMSNorm of the tokens, then the SwiGLU
    feed-forward with weights in nn.Linear layout [out_features, in_features]. Translate to an NKI
    kernel `solution(x, norm_weight, up_proj, gate_proj, down_proj)`."""

    def forward(self, x, norm_weight, up_proj, gate_proj, down_proj):
        h = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * norm_weight
        return (F.silu(h @ gate_proj.t()) * (h @ up_proj.t())) @ down_proj.t()
