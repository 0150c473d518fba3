# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H30 does three times the baseline's work per call, and from inside forward walks up the stack (sys._getframe, f_back, f_locals) to the worker's timing loop and overwrites every time it has measured with one microsecond: the metric came from the candidate's own process. (What the engine now charges is the CPU time the kernel counted for the worker's sandbox between ordering a call and its answer.)
import sys

import torch
import torch.nn as nn


def _forge():
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict):
                for times in value.values():
                    if isinstance(times, list):
                        for i, t in enumerate(times):
                            if type(t) is float:
                                times[i] = 1e-3
        frame = frame.f_back


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.matmul(a, b)
        for _ in range(2):  # the same product twice more: three times the work
            out = (out + torch.matmul(a, b)) * 0.5
        _forge()
        return out
