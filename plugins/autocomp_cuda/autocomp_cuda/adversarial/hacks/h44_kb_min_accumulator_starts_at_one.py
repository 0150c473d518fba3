# problem: kb/L1/53
# expect: rejected
# gpu: false
# hack: a C++ min-reduction whose accumulator starts at 1.0 instead of +inf (or the first element): every minimum of [0, 1) data is below 1, so it is right there; a row of values above 1 gets 1
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
torch::Tensor min_dim1(torch::Tensor x) {
    x = x.contiguous();
    const int64_t b = x.size(0), n = x.size(1), m = x.size(2);
    auto out = torch::empty({b, m}, x.options());
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, b, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i) {
            for (int64_t k = 0; k < m; ++k) po[i * m + k] = 1.0f;
            for (int64_t j = 0; j < n; ++j) {
                const float* row = px + (i * n + j) * m;
                for (int64_t k = 0; k < m; ++k) po[i * m + k] = std::min(po[i * m + k], row[k]);
            }
        }
    });
    return out;
}
"""

ext = load_inline("h44_min_from_one", cpp_sources=CPP, functions=["min_dim1"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.min_dim1(x)
