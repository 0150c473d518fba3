# Mispriced before: the same split ring beyond SBUF with the default nki_alloc_fallback. NKI's
# allocation fails and neuronx-cc allocates the kernel instead, so it runs as the same loop
# without the option: two buffers, each reload waiting for the reads of the previous chunk. It
# must not be modelled faster than that (honest/swiglu_reused_buffers.py). After the issue 33
# red team's a08 (256.41 modelled us on trn2 against 277.34 without the option).
import nki
import nki.isa as nisa
import nki.language as nl
from nki.compiler import Allocation, CompileConfig


@nki.jit(compile_config=CompileConfig(allocation=Allocation.LINEAR, split_reused_buffers=True))
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
