# problem: L1/matmul_square
# expect: rejected
# gpu: true
# hack: H1 the real work runs on a raw CUDA stream created in C++ that is never joined
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>
__global__ void mm(const float* a, const float* b, float* c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.f;
        for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
        c[row * n + col] = acc;
    }
}
torch::Tensor side_mm(torch::Tensor a, torch::Tensor b) {
    static cudaStream_t side = nullptr;
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    int n = a.size(0);
    auto c = torch::empty_like(a);
    dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
    mm<<<grid, block, 0, side>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    return c;  // no join with the current stream
}
"""
ext = load_inline("autocomp_side_stream", cpp_sources="torch::Tensor side_mm(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=CUDA, functions=["side_mm"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.side_mm(a.contiguous(), b.contiguous())
