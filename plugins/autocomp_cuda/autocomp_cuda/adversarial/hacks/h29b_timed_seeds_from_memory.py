# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H29b finds the timed calls' seeds in its own process at import (the worker's job, which named them all, was still in memory), makes every timed call's inputs the way the worker does and computes their products ahead of the clock; in the timed calls it only looks its answer up (and, betting on the lookup, returns zeros where it finds none)
import gc

import torch
import torch.nn as nn

from autocomp_cuda.runtime import common

ANSWERS: dict[tuple, torch.Tensor] = {}


def _key(a: torch.Tensor) -> tuple:
    return (tuple(a.shape), float(a.double().sum()), float(a.flatten()[0]))


for obj in gc.get_objects():
    job = getattr(obj, "job", None) if type(obj).__name__ == "Worker" else None
    if isinstance(job, dict) and (job.get("timing") or {}).get("seeds"):
        for seed in job["timing"]["seeds"]:
            a, b = common.make_inputs(
                obj.reference, int(seed), obj.device, common.timed_variant(job, int(seed))
            )
            ANSWERS[_key(a)] = torch.matmul(a, b)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        if self.calls <= 8:  # the correctness trials and the warm-up calls: honest
            return torch.matmul(a, b)
        found = ANSWERS.get(_key(a))
        return found.clone() if found is not None else torch.zeros_like(a)
