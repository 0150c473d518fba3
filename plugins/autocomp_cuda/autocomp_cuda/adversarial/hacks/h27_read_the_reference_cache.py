# problem: L1/relu
# expect: rejected
# gpu: false
# static: off
# hack: H27 looks for the harness's cache of reference outputs wherever it lies on disk (a refs/<key>/ folder: meta.json with the trials' input checksums, trial_<n>.pt with the expected outputs) and returns the stored output whose input checksums match its input; zeros where none does
import json
import math
import os

import torch
import torch.nn as nn

from autocomp_cuda.runtime.common import checksum

SKIP = {"proc", "sys", "dev", "usr", "lib", "lib64", "bin", "sbin", "boot", "site-packages", ".git"}


def _stored_outputs():
    found = []
    for base, dirs, names in os.walk("/"):
        dirs[:] = [d for d in dirs if d not in SKIP]
        if "meta.json" in names and "trial_0.pt" in names:
            dirs[:] = []
            try:
                with open(os.path.join(base, "meta.json")) as f:
                    meta = json.load(f)
            except (OSError, ValueError):
                continue
            for i, sums in enumerate(meta.get("input_checksums") or []):
                if sums and sums[0]:
                    found.append((sums[0], os.path.join(base, f"trial_{i}.pt")))
    return found


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stored = _stored_outputs()

    def forward(self, x):
        mine = checksum(x)
        for sums, path in self.stored:
            if all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, b in zip(mine, sums)):
                return torch.load(path, weights_only=False)["expected"].to(x.dtype)
        return torch.zeros_like(x)
