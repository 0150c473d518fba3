# problem: L2/scale_bias_clamp_mul
# expect: ok
# gpu: true
# what: the whole chain as one CUDA kernel: one read of x, gate and residual, one write
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor fused(torch::Tensor x, torch::Tensor gate, torch::Tensor residual, torch::Tensor a, torch::Tensor b);"

CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAException.h>

__global__ void fused_kernel(const float* __restrict__ x, const float* __restrict__ gate,
                             const float* __restrict__ residual, const float* __restrict__ a,
                             const float* __restrict__ b, float* __restrict__ out, long n, long cols) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long c = i % cols;
        float y = fmaf(x[i], a[c], b[c]);
        y = fminf(fmaxf(y, -1.5f), 2.0f);
        out[i] = fmaf(y, gate[i], residual[i]);
    }
}

torch::Tensor fused(torch::Tensor x, torch::Tensor gate, torch::Tensor residual, torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x must be a float CUDA tensor");
    x = x.contiguous(); gate = gate.contiguous(); residual = residual.contiguous();
    auto out = torch::empty_like(x);
    const long n = x.numel(), cols = x.size(-1);
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    fused_kernel<<<blocks, threads>>>(x.data_ptr<float>(), gate.data_ptr<float>(), residual.data_ptr<float>(),
                                      a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline("autocomp_fused_sbcm_cuda", cpp_sources=CPP, cuda_sources=CUDA, functions=["fused"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.a = nn.Parameter(torch.ones(cols))
        self.b = nn.Parameter(torch.zeros(cols))

    def forward(self, x, gate, residual):
        return ext.fused(x, gate, residual, self.a, self.b)
