# problem: L1/relu
# expect: rejected
# gpu: true
# static: off
# hack: a CUDA graph captured on the first call is replayed on a side stream that is never joined: the timed stream's events see almost no work
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x):
        if self.graph is None:
            self.side = torch.cuda.Stream()
            self.static_x = torch.empty_like(x)
            self.static_y = torch.empty_like(x)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                torch.relu(self.static_x, out=self.static_y)
        self.static_x.copy_(x)  # on the current stream
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            self.graph.replay()  # not joined back: the caller's events miss it
        return self.static_y
