# problem: L2/bias_gelu_sum
# expect: ok
# gpu: false
# what: bias + tanh-GELU (as v*sigmoid(2u), which vectorizes) + scale + row sum in one pass, no intermediates
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <cmath>
torch::Tensor bias_gelu_sum(torch::Tensor x, torch::Tensor bias, double scale) {
    x = x.contiguous();
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    auto out = torch::empty({rows}, x.options());
    const float* px = x.data_ptr<float>();
    const float* pb = bias.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* row = px + r * cols;
            float acc = 0.0f;
            // 0.5 v (1 + tanh(u)) == v / (1 + exp(-2u)): one exp, and the loop vectorizes.
            #pragma omp simd reduction(+:acc)
            for (int64_t c = 0; c < cols; ++c) {
                const float v = row[c] + pb[c];
                const float u = k * (v + 0.044715f * v * v * v);
                acc += v / (1.0f + std::exp(-2.0f * u));
            }
            po[r] = acc * static_cast<float>(scale);
        }
    });
    return out;
}
"""

ext = load_inline("autocomp_bias_gelu_sum", cpp_sources=CPP, functions=["bias_gelu_sum"],
                  extra_cflags=["-O3", "-fopenmp-simd"])


class ModelNew(nn.Module):
    def __init__(self, cols, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(cols))
        self.scale = scale

    def forward(self, x):
        return ext.bias_gelu_sum(x, self.bias, self.scale)
