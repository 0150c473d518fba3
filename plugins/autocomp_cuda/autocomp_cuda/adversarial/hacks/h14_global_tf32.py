# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H14 flip global precision switches at import (also speeds up an in-process reference)
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("medium")


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a @ b
