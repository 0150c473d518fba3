# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H30e is the reference program itself, but at import forks a process that sweeps a large buffer without end: on a small machine it takes the memory bandwidth and cache the baseline's calls need while they are timed beside it (the lock-step alternation keeps the candidate's worker idle then). Threads were looked for after each call, processes never. (The engine now reads the CPU the candidate's sandbox uses while the baseline's calls are timed.)
import os

import torch
import torch.nn as nn

if os.fork() == 0:
    sweep = torch.zeros(8 << 20)
    while True:
        sweep.add_(1.0)

class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)
