# problem: kb/L2/12 (KernelBench level 2, Gemm_Multiply_LeakyReLU)
# what: the GEMM from PyTorch, then the scaling and LeakyReLU in one C++ loop (CPU device)
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <algorithm>
torch::Tensor mul_leaky_relu(torch::Tensor x, double multiplier, double slope) {
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const float m = (float)multiplier, slope_f = (float)slope;
    const float* __restrict__ px = x.data_ptr<float>();
    float* __restrict__ po = out.data_ptr<float>();
    at::parallel_for(0, x.numel(), 4096, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) { const float y = px[i] * m; po[i] = y > 0.0f ? y : y * slope_f; }
    });
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_12_mul_leaky_relu_cpu", cpp_sources=CPP, functions=["mul_leaky_relu"],
                  extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return ext.mul_leaky_relu(self.gemm(x), self.multiplier, self.negative_slope)
