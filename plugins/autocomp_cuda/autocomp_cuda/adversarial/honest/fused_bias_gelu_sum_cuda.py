# problem: L2/bias_gelu_sum
# expect: ok
# gpu: true
# what: one CUDA block per row: bias + tanh-GELU + scale + row sum with warp shuffles, no intermediates
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor bias_gelu_sum(torch::Tensor x, torch::Tensor bias, double scale);"

CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAException.h>

constexpr int THREADS = 256;

__global__ void bias_gelu_sum_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                     float* __restrict__ out, int cols, float scale) {
    const float* row = x + (long)blockIdx.x * cols;
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        const float v = row[c] + bias[c];
        acc += 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    __shared__ float warp_sums[THREADS / 32];
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.f;
        for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (threadIdx.x == 0) out[blockIdx.x] = acc * scale;
    }
}

torch::Tensor bias_gelu_sum(torch::Tensor x, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x must be a float CUDA tensor");
    x = x.contiguous();
    const int cols = (int)x.size(-1);
    const long rows = x.numel() / cols;
    auto out = torch::empty({rows}, x.options());
    bias_gelu_sum_kernel<<<(unsigned)rows, THREADS>>>(x.data_ptr<float>(), bias.contiguous().data_ptr<float>(),
                                                      out.data_ptr<float>(), cols, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline("autocomp_bias_gelu_sum_cuda", cpp_sources=CPP, cuda_sources=CUDA, functions=["bias_gelu_sum"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, cols, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(cols))
        self.scale = scale

    def forward(self, x):
        return ext.bias_gelu_sum(x, self.bias, self.scale)
