# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H50 does twice the baseline's work per call and, at its first call, finds the worker's cache-flush buffer among the heap's objects (gc) and resizes it to nothing: the flush before each of its timed calls then costs nothing and leaves the inputs warm in the cache, while what the engine subtracted from its window was the baseline worker's full flush. The flush became a step the engine clocks on its own, compared with the baseline worker's (part E); since part F the CPU device has no flush in the worker's process at all, so H50 finds no buffer to empty and is measured at its true cost.
import gc

import torch
import torch.nn as nn

_emptied = []


def _empty_the_flush_buffer() -> None:
    for obj in gc.get_objects():
        if (
            isinstance(obj, torch.Tensor)
            and obj.dim() == 1
            and obj.dtype == torch.int32
            and obj.numel() * obj.element_size() >= 256 * 1024
        ):
            obj.resize_(0)
            _emptied.append(obj)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not _emptied:
            _empty_the_flush_buffer()
        torch.matmul(a, b)
        return torch.matmul(a, b)
