"""autocomp backend for NVIDIA GPUs (and CPU for CI): KernelBench-format problems, hardened harness."""

__all__: list[str] = []
