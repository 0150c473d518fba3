# problem: kb/L2/1 (KernelBench level 2, Conv2D_ReLU_BiasAdd)
# what: cuDNN's convolution, then ReLU and the per-channel bias add in one CUDA pass
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor relu_bias(torch::Tensor x, torch::Tensor bias);"

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void relu_bias_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ out, long n, long plane, long channels) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        out[i] = fmaxf(x[i], 0.0f) + bias[(i / plane) % channels];
    }
}

torch::Tensor relu_bias(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.dim() == 4, "x: float CUDA NCHW");
    x = x.contiguous();
    auto out = torch::empty_like(x);
    const long n = x.numel(), plane = x.size(2) * x.size(3), channels = x.size(1);
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    relu_bias_kernel<<<blocks, threads>>>(x.data_ptr<float>(), bias.contiguous().data_ptr<float>(),
                                          out.data_ptr<float>(), n, plane, channels);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline("autocomp_kb_l2_1_relu_bias", cpp_sources=CPP, cuda_sources=CUDA, functions=["relu_bias"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return ext.relu_bias(self.conv(x), self.bias)
