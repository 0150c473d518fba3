# problem: L2/linear_scale_leakyrelu
# expect: rejected
# gpu: false
# hack: H19 compute once, keep the result in the module, return it for every later input
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_f, out_f, scale, slope):
        super().__init__()
        self.fc = nn.Linear(in_f, out_f)
        self.scale, self.slope = scale, slope
        self.saved = None

    def forward(self, x):
        if self.saved is None or self.saved.shape[0] != x.shape[0]:
            self.saved = F.leaky_relu(self.fc(x) * self.scale, self.slope)
        return self.saved.clone()
