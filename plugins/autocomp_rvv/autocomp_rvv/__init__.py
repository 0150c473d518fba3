"""autocomp-rvv: RISC-V Vector 1.0 backend for autocomp."""

__version__ = "0.1.0"
