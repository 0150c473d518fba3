# problem: L1/relu
# expect: ok
# gpu: false
# what: a try/except around the build that re-raises (no fallback), and a C++ kernel that is really used
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
torch::Tensor relu(torch::Tensor x) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    at::parallel_for(0, x.numel(), 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = px[i] > 0.f ? px[i] : 0.f;
    });
    return y;
}
"""

try:
    ext = load_inline("autocomp_guarded_relu", cpp_sources=CPP, functions=["relu"], extra_cflags=["-O3"])
except RuntimeError as exc:
    raise RuntimeError("the relu extension did not build") from exc


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
