# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H61 is the third meter red team's a03, aimed at the engine rather than the metric: after its correctness trials and warm-up it returns, from each timed call, one float expanded to 2**20 x 2**20 elements (strides 0, 0): a plain torch.Tensor whose elements all lie in four bytes. The engine reads a timed call's output out of the worker itself; had it gathered the elements the worker's description names, it would have tried to allocate 4 TiB in its own process (a MemoryError that ended the evaluation as the evaluator's fault). The engine refuses any output that is not the problem's shape and dtype before reading it, and any description beyond its size bound.
import torch
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        _calls[0] += 1
        if _calls[0] > 8:  # (after the five correctness trials and three warm-up calls)
            return torch.zeros(1).expand(2**20, 2**20)
        return torch.relu(x)
