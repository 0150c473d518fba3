# problem: kb/L2/9 (KernelBench level 2, Matmul_Subtract_Multiply_ReLU)
# what: cuBLAS's GEMM with the bias, then subtract, multiply and ReLU in one CUDA pass
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor sub_mul_relu(torch::Tensor x, double subtract, double multiply);"

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void sub_mul_relu_kernel(const float* __restrict__ x, float* __restrict__ out, long n,
                                    float subtract, float multiply) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        out[i] = fmaxf((x[i] - subtract) * multiply, 0.0f);
    }
}

torch::Tensor sub_mul_relu(torch::Tensor x, double subtract, double multiply) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x: float CUDA tensor");
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const long n = x.numel();
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    sub_mul_relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), n, (float)subtract,
                                             (float)multiply);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_9_sub_mul_relu", cpp_sources=CPP, cuda_sources=CUDA, functions=["sub_mul_relu"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        return ext.sub_mul_relu(self.linear(x), self.subtract_value, self.multiply_value)
