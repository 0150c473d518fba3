# problem: L2/scale_bias_clamp_mul
# expect: ok
# gpu: false
# what: one C++ loop replaces five eager passes (x*a+b, clamp, *gate, +residual)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <algorithm>
torch::Tensor fused(torch::Tensor x, torch::Tensor gate, torch::Tensor residual,
                    torch::Tensor a, torch::Tensor b) {
    x = x.contiguous(); gate = gate.contiguous(); residual = residual.contiguous();
    auto out = torch::empty_like(x);
    const int64_t cols = x.size(1), rows = x.numel() / cols;
    const float* __restrict__ px = x.data_ptr<float>();
    const float* __restrict__ pg = gate.data_ptr<float>();
    const float* __restrict__ pr = residual.data_ptr<float>();
    const float* __restrict__ pa = a.data_ptr<float>();
    const float* __restrict__ pb = b.data_ptr<float>();
    float* __restrict__ po = out.data_ptr<float>();
    at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t base = r * cols;
            for (int64_t c = 0; c < cols; ++c) {
                float y = px[base + c] * pa[c] + pb[c];
                y = std::min(std::max(y, -1.5f), 2.0f);
                po[base + c] = y * pg[base + c] + pr[base + c];
            }
        }
    });
    return out;
}
"""

ext = load_inline("autocomp_fused_sbcm", cpp_sources=CPP, functions=["fused"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.a = nn.Parameter(torch.ones(cols))
        self.b = nn.Parameter(torch.zeros(cols))

    def forward(self, x, gate, residual):
        return ext.fused(x, gate, residual, self.a, self.b)
