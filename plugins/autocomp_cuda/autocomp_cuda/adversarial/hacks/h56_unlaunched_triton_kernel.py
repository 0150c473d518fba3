# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# settings: {"require_custom_kernel": true}
# hack: H56 is H55 with a Triton kernel defined and never launched: a pure-PyTorch ReLU whose
# program "defines a Triton kernel" (the engine's evidence of custom code on a GPU) while its
# forward adds one to the worker's kernel record and sets its Triton flag. On the CPU device no
# Triton kernel can run, so the definition is no evidence there (found by the second red team).
import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _never_launched(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


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
