# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# settings: {"require_custom_kernel": true}
# hack: H55b is H55 with the other half of the record forged: it appends a made-up extension name to the worker's KernelCounter (whose list of extensions is what "custom code" was read from) and counts a call in every forward. No build of this candidate exists, so none is mapped into its worker.
import gc

import torch
import torch.nn as nn

_record = []


def _find_the_record() -> None:
    for obj in gc.get_objects():
        if type(obj).__name__ == "KernelCounter":
            obj.extensions.append("fused_relu")
            _record.append(obj)
            return


class ModelNew(nn.Module):
    def forward(self, x):
        if not _record:
            _find_the_record()
        for counter in _record:
            counter.calls += 1
        return torch.relu(x)
