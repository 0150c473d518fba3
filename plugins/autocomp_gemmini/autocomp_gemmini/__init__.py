"""autocomp-gemmini: the Gemmini backend (bare-metal RISC-V on Spike + our Gemmini model)."""

__version__ = "0.1.0"
