# problem: kb/L2/12 (KernelBench level 2, Gemm_Multiply_LeakyReLU)
# what: cuBLAS's GEMM with the bias, then the scaling and LeakyReLU in one CUDA pass
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor mul_leaky_relu(torch::Tensor x, double multiplier, double slope);"

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void mul_leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ out, long n,
                                      float multiplier, float slope) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float y = x[i] * multiplier;
        out[i] = y > 0.0f ? y : y * slope;
    }
}

torch::Tensor mul_leaky_relu(torch::Tensor x, double multiplier, double slope) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x: float CUDA tensor");
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const long n = x.numel();
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    mul_leaky_relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), n, (float)multiplier,
                                               (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_12_mul_leaky_relu", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mul_leaky_relu"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return ext.mul_leaky_relu(self.gemm(x), self.multiplier, self.negative_slope)
