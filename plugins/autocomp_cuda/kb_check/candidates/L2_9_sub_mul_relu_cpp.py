# problem: kb/L2/9 (KernelBench level 2, Matmul_Subtract_Multiply_ReLU)
# what: the GEMM from PyTorch, then subtract, multiply and ReLU in one C++ loop (CPU device)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <algorithm>
torch::Tensor sub_mul_relu(torch::Tensor x, double subtract, double multiply) {
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const float s = (float)subtract, m = (float)multiply;
    const float* __restrict__ px = x.data_ptr<float>();
    float* __restrict__ po = out.data_ptr<float>();
    at::parallel_for(0, x.numel(), 4096, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) po[i] = std::max((px[i] - s) * m, 0.0f);
    });
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_9_sub_mul_relu_cpu", cpp_sources=CPP, functions=["sub_mul_relu"],
                  extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        return ext.sub_mul_relu(self.linear(x), self.subtract_value, self.multiply_value)
