# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H73 rebinds its worker's ``finish`` (found in sys.modules) to write the status the engine keeps for its own failings, ``infra_error``, into its result. The engine took any status a worker wrote: an evaluator's error, which a search retries for free and holds against no one (the Trainium attack class, here through the worker's result). A worker may report only the statuses a worker can have.
import sys

import torch
import torch.nn as nn


def _failing(finish):
    def finished(self):
        self.result.update(status="infra_error", message="the evaluator's disk is full")
        return finish(self)

    return finished


for _module in list(getattr(sys, "mod" + "ules").values()):
    _names = getattr(_module, "__dict__", None)
    if _names and "Worker" in _names and hasattr(_names["Worker"], "finish"):
        _names["Worker"].finish = _failing(_names["Worker"].finish)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
