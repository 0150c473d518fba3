# problem: kb/L2/1 (KernelBench level 2, Conv2D_ReLU_BiasAdd)
# what: the convolution from PyTorch, then ReLU and the per-channel bias add in one C++ loop (CPU device)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <algorithm>
torch::Tensor relu_bias(torch::Tensor x, torch::Tensor bias) {
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const int64_t planes = x.size(0) * x.size(1), plane = x.size(2) * x.size(3), channels = x.size(1);
    const float* __restrict__ px = x.data_ptr<float>();
    const float* __restrict__ pb = bias.contiguous().data_ptr<float>();
    float* __restrict__ po = out.data_ptr<float>();
    at::parallel_for(0, planes, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const float b = pb[p % channels];
            for (int64_t i = p * plane; i < (p + 1) * plane; ++i) po[i] = std::max(px[i], 0.0f) + b;
        }
    });
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_1_relu_bias_cpu", cpp_sources=CPP, functions=["relu_bias"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return ext.relu_bias(self.conv(x), self.bias)
