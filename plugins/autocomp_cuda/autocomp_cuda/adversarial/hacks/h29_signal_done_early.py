# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H29 signals its timed calls done before they are: the engine drives the baseline's and the candidate's workers in lock-step through files in each worker's dir (call-<r>.json in, done-<r> out), so the candidate writes every done-<r> into its own dir at import; the engine then hands the baseline its next call while the candidate's is still running, and the two share the machine (here the candidate's call holds on for 5 ms after computing, standing in for any work that would slow the baseline beside it)
import time
from pathlib import Path

import torch
import torch.nn as nn

for r in range(1000):  # the worker's cwd is its work dir
    Path(f"done-{r}").write_text("")


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.matmul(a, b)
        time.sleep(0.005)
        return out
