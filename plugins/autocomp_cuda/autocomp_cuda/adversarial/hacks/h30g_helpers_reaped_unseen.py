# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H30g takes CPU time back from the engine's clock: at import it ignores SIGCHLD (so the kernel reaps its children itself, and their CPU time reaches no parent's account), forks helpers that burn CPU and then wait, and releases one in each timed call; the helper exits inside the window and the CPU it had used vanishes from the sandbox's total, so the call measures less than nothing (clamped to 0 ms).
import os
import signal
import time

import torch
import torch.nn as nn

signal.signal(signal.SIGCHLD, signal.SIG_IGN)
_releases = []
for _ in range(40):
    r, w = os.pipe()
    if os.fork() == 0:
        end = time.process_time() + 0.02
        while time.process_time() < end:
            pass
        os.read(r, 1)
        os._exit(0)
    _releases.append(w)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _releases:
            os.write(_releases.pop(), b"x")
        return torch.matmul(a, b)
