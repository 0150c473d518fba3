# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H75 is an honest C++ ReLU whose build reports three more "libraries": sparse files of a GiB each, made in its build folder (no disk blocks, so no bound on what the build's work dir holds sees them), added to its worker's record of what it built (found through the garbage collector). The engine read every library a build reported into its own memory and wrote real copies to its cache and into each worker: gigabytes of the engine's memory and disk per evaluation, with no bound on how many (the ninth red team's a06). A build now keeps at most 16 libraries of at most 256 MiB each, 512 MiB in all, copied a chunk at a time.
import gc
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
torch::Tensor relu(torch::Tensor x) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = px[i] > 0.f ? px[i] : 0.f;
    return y;
}
"""

ext = load_inline("autocomp_h75_relu", cpp_sources=CPP, functions=["relu"], extra_cflags=["-O2"])

for _obj in gc.get_objects():
    if type(_obj).__name__ == "KernelCounter" and isinstance(getattr(_obj, "built", None), dict):
        for _i in range(3):
            _path = os.path.abspath(f"giant_{_i}.so")
            with open(_path, "wb") as _f:
                _f.truncate(1 << 30)
            _obj.built[f"giant_{_i}"] = _path


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
