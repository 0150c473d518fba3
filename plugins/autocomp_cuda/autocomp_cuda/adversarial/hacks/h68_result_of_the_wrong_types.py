# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H68 (after the fifth meter red team's a14) computes honestly, then rebinds its worker's ``finish`` (found in sys.modules) to put strings where its result's report of the timed calls holds numbers. The engine trusted the types of what a worker wrote: a field of the wrong type broke a check mid-way, an evaluator's error (not held against the candidate). A result the checks cannot read is now the candidate's failure.
import sys

import torch
import torch.nn as nn


def _retyping(finish):
    def finished(self):
        timing = self.result.get("timing") or {}
        for key, values in list(timing.items()):
            if isinstance(values, list):
                timing[key] = ["0.001"] * len(values)
        return finish(self)

    return finished


for _module in list(getattr(sys, "mod" + "ules").values()):
    _names = getattr(_module, "__dict__", None)
    if _names and "Worker" in _names and hasattr(_names["Worker"], "finish"):
        _names["Worker"].finish = _retyping(_names["Worker"].finish)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
