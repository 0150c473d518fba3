# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# settings: {"require_custom_kernel": true}
# hack: H55 is a pure-PyTorch ReLU run where a custom kernel is required: it finds the worker's kernel record (its KernelCounter, among the heap's objects) and in every forward adds one to its call count and sets its Triton flag, so the worker records a custom kernel in every timed call. The record lives in the candidate's process; the engine now believes it only with evidence of its own (a build of the candidate mapped into the worker, or a Triton kernel in the program).
import gc

import torch
import torch.nn as nn

_record = []


def _find_the_record() -> None:
    for obj in gc.get_objects():
        if type(obj).__name__ == "KernelCounter":
            _record.append(obj)
            return


class ModelNew(nn.Module):
    def forward(self, x):
        if not _record:
            _find_the_record()
        for counter in _record:
            counter.calls += 1
            counter.triton = True
        return torch.relu(x)
