"""Our Gemmini model: a bit-exact functional model plus a timing model, driven by RoCC commands."""
from .functional import ArrayConfig, Gemmini, GemminiError
from .memory import ByteMemory, Memory
from .timing import TimingModel, TimingParams

__all__ = ["ArrayConfig", "ByteMemory", "Gemmini", "GemminiError", "Memory", "TimingModel", "TimingParams"]
