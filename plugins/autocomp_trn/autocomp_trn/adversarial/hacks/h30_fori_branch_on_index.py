# Broken: a fori_loop body that picks its engine in Python from the loop index. On the device
# the body is compiled once and the index is a register, so this cannot compile; an emulator
# that calls the body once per iteration with a Python int would accept it (and price the
# engines alternating). Found by the issue 33 red team.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def solution(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    free = rows * cols // 128
    av, bv, ov = a.reshape((128, free)), b.reshape((128, free)), out.reshape((128, free))
    width = 4096

    def body(j):
        a_t = nl.ndarray((128, width), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_t, src=av[:, j * width : (j + 1) * width])
        b_t = nl.ndarray((128, width), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b_t, src=bv[:, j * width : (j + 1) * width])
        nisa.activation(dst=a_t, op=nl.silu, data=a_t)
        engine = nisa.vector_engine if j % 2 == 0 else nisa.gpsimd_engine
        nisa.tensor_tensor(dst=a_t, data1=a_t, data2=b_t, op=nl.multiply, engine=engine)
        nisa.dma_copy(dst=ov[:, j * width : (j + 1) * width], src=a_t)

    nl.fori_loop(0, free // width, body)
    return out
