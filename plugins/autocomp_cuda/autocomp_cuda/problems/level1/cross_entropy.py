"""Mean cross-entropy loss of logits against int64 class targets (scalar output)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
CLASSES = 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


def get_inputs():
    scale = float(torch.empty(()).uniform_(1.0, 6.0))
    logits = torch.randn(BATCH, CLASSES) * scale
    targets = torch.randint(0, CLASSES, (BATCH,), dtype=torch.int64)
    return [logits, targets]


def get_init_inputs():
    return []


AUTOCOMP = {"tiny": {"BATCH": 12, "CLASSES": 17}, "flops": "4*BATCH*CLASSES", "tags": ["loss", "reduction", "integer"]}
