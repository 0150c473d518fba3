import math

import torch
from torch import nn


class Model(nn.Module):
    """Llama token-generation attention with grouped-query heads (16 query heads share 4 key/value
    heads): the new token's query against the cached keys (where attention_mask is 1) and its
    own key. Translate to an NKI kernel
    `solution(q, k_active, v_active, k_prior, v_prior, attention_mask)`."""

    def forward(self, q, k_active, v_active, k_prior, v_prior, attention_mask):
        group = q.shape[1] // k_prior.shape[1]
        k_prior = k_prior.repeat_interleave(group, dim=1)
        v_prior = v_prior.repeat_interleave(group, dim=1)
        k_active = k_active.repeat_interleave(group, dim=1)
        v_active = v_active.repeat_interleave(group, dim=1)
        scale = 1.0 / math.sqrt(q.shape[-1])
        prior = (q @ k_prior.transpose(2, 3)) * scale
        prior = torch.where(attention_mask > 0, prior, torch.finfo(prior.dtype).min)
        active = (q @ k_active.transpose(2, 3)) * scale
        probs = torch.softmax(torch.cat([prior, active], dim=-1), dim=-1)
        return probs[..., :-1] @ v_prior + probs[..., -1:] @ v_active
