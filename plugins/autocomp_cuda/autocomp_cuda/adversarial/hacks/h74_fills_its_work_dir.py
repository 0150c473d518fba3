# problem: L1/relu
# expect: rejected
# also: runtime_error
# gpu: false
# static: off
# settings: {"disk_mb": 64}
# hack: H74 fills the disk: every call writes more files of a MiB into its work dir (each file under the sandbox's file-size limit, which bounds one file, not their number). Nothing bounded what a worker's work dir held: a search that kept such a program would fill the machine's disk, failing every run on it and the engine's own store. Its sandbox now kills a run whose work dir holds more than its limit (here 64 MB), and the candidate's verdict says so.
import os

import torch
import torch.nn as nn

_chunk = os.urandom(1 << 20)
_written = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        for _ in range(8):
            _written[0] += 1
            with open(f"scratch_{_written[0]}.bin", "wb") as f:
                f.write(_chunk)
        return torch.relu(x)
