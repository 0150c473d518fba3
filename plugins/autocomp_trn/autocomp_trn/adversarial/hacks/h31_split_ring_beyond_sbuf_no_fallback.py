# Broken: split_reused_buffers on two reloaded 64 KiB-per-partition buffers needs 256 KiB per
# partition at once (each buffer and its alternate), more than any NeuronCore's SBUF, and
# nki_alloc_fallback=False asks for NKI's allocation failure instead of neuronx-cc's retry. The
# compiler refuses it; an emulator that prices the two alternating buffers without checking they
# fit would report the overlap they buy. After the issue 33 red team's a08.
import nki
import nki.isa as nisa
import nki.language as nl
from nki.compiler import Allocation, CompileConfig

CONFIG = CompileConfig(
    allocation=Allocation.LINEAR, split_reused_buffers=True, nki_alloc_fallback=False
)


@nki.jit(compile_config=CONFIG)
def solution(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    free = rows * cols // 128
    av, bv, ov = a.reshape((128, free)), b.reshape((128, free)), out.reshape((128, free))
    width = 16384
    gate = nl.ndarray((128, width), dtype=a.dtype, buffer=nl.sbuf)
    up = nl.ndarray((128, width), dtype=b.dtype, buffer=nl.sbuf)
    for j in range(free // width):
        cols_j = slice(j * width, (j + 1) * width)
        nisa.dma_copy(dst=gate, src=av[:, cols_j])
        nisa.dma_copy(dst=up, src=bv[:, cols_j])
        nisa.activation(dst=gate, op=nl.silu, data=gate)
        nisa.tensor_tensor(dst=gate, data1=gate, data2=up, op=nl.multiply)
        nisa.dma_copy(dst=ov[:, cols_j], src=gate)
    return out
