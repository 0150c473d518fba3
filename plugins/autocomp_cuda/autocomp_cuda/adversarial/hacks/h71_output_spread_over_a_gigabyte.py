# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H71 (the sixth meter red team's a05) returns, in its timed calls, a right output laid out with rows 1 GiB / rows apart in an untouched 1 GiB block (the input buffer it sees a third time is the one the engine writes the timed calls' inputs into). The engine read and kept an output's whole strided extent before anything looked at its strides: 2.15 GB of memory, 73 s of system CPU and 131 s of wall time outside the candidate's sandbox, for a refusal it would have reached anyway. An output spread over more than four times its elements' room (and a MiB) is now refused before it is read.
import torch
import torch.nn as nn

BLOCK = 2**28  # elements: 1 GiB of float32


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}
        self.block = None

    def forward(self, x):
        self.seen[x.data_ptr()] = self.seen.get(x.data_ptr(), 0) + 1
        if self.seen[x.data_ptr()] < 3:  # (the checked calls, and the warm-up)
            return torch.relu(x)
        rows, cols = x.shape
        stride = max(cols, BLOCK // rows)
        if self.block is None:
            self.block = torch.empty(rows * stride)  # (never touched: no memory of its own)
        out = self.block.as_strided((rows, cols), (stride, 1))
        out.copy_(torch.relu(x))
        return out
