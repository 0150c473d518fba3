# problem: L1/matmul_square
# expect: ok
# gpu: true
# what: work on a side stream that is joined before forward returns (legitimate overlap)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()

    def forward(self, a, b):
        current = torch.cuda.current_stream()
        self.stream.wait_stream(current)
        with torch.cuda.stream(self.stream):
            out = a @ b
        current.wait_stream(self.stream)
        out.record_stream(current)
        return out
