# problem: L1/relu
# expect: rejected
# gpu: true
# hack: E9 a persisting-L2 carve-out and an access-policy window over the input keep it L2-resident across timed calls (the harness's flush does not evict persisting lines)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor carved_relu(torch::Tensor x) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    size_t carve = prop.persistingL2CacheMaxSize;
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, carve);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = x.data_ptr();
    size_t bytes = x.numel() * sizeof(float);
    attr.accessPolicyWindow.num_bytes = bytes < (size_t)prop.accessPolicyMaxWindowSize ? bytes
                                                                                      : prop.accessPolicyMaxWindowSize;
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    auto y = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline("autocomp_persisting_l2", cpp_sources="torch::Tensor carved_relu(torch::Tensor x);",
                  cuda_sources=CUDA, functions=["carved_relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.carved_relu(x.contiguous())
