"""The drift canary: a known kernel run on the device before any candidate of its API.

A result of all zeros, a constant, NaN or a wrong value for it means the installed Neuron SDK (or
device) no longer computes what the kernel says, the field's known failure after an SDK upgrade
(nki-samples #134: kernels returning all zeros). The Neuron evaluator then reports every
evaluation as ``infra_error`` with ``CANARY_MESSAGE``, never as a candidate's verdict.
"""

from __future__ import annotations

import numpy as np

from .evaluate import Verdict
from .problems.spec import Input, ProblemSpec, Work

CANARY_MESSAGE = "the Neuron SDK returned a wrong result for a known kernel (drift canary)"


#: the known kernel, in each API generation: out = 2a + b on one [128, 512] fp32 tile (VectorE,
#: DMA) and prod = a[:, :128].T @ b in bf16 with fp32 accumulation (TensorE, PSUM)
def _canary_reference(a, b):
    import ml_dtypes

    def bf16(x):
        return x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)

    return 2.0 * a + b, bf16(a[:, :128]).T @ bf16(b)


CANARY_SPEC = ProblemSpec(
    id="canary/scale_add_matmul",
    title="drift canary",
    description="a known kernel run before any candidate: 2a + b and a[:, :128].T @ b",
    inputs=[Input("a", (128, 512)), Input("b", (128, 512))],
    outputs=[((128, 512), "float32"), ((128, 512), "float32")],
    reference=_canary_reference,
    atol=1e-4,
    rtol=1e-4,
    work=lambda ins: Work(),
    baseline="",
    entry="canary",
)
CANARY_SEEDS = [20260, 20261]
CANARY_SOURCE = {
    "v2": """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def canary(a, b):
    ta = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    twice = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=twice, data=ta, op0=nl.multiply, operand0=2.0)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=res, data1=twice, data2=tb, op=nl.add)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    sa = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    sb = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sa, src=ta[:, 0:128])
    nisa.tensor_copy(dst=sb, src=tb)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=sa, moving=sb)
    got = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=got, src=acc)
    prod = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=prod, src=got)
    return out, prod
""",
    "v1": """from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def canary(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    prod = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    nl.store(out, value=nl.add(nl.multiply(ta, 2.0), tb))
    sa = nl.copy(ta[:, 0:128], dtype=nl.bfloat16)
    sb = nl.copy(tb, dtype=nl.bfloat16)
    nl.store(prod, value=nl.copy(nisa.nc_matmul(sa, sb), dtype=nl.float32))
    return out, prod
""",
}


def canary_failure(outputs: list[np.ndarray], references: list[np.ndarray]) -> str | None:
    """Why the device's result for the known kernel is wrong (None: it is right). ``outputs`` and
    ``references``: one array per output, leading axis = seed. All zeros and a constant are named
    as such: the known failure of a drifted SDK (nki-samples #134)."""
    from .check import compare

    for k, (out, ref) in enumerate(zip(outputs, references, strict=True)):
        o = np.asarray(out, dtype=np.float64)
        if o.shape != np.shape(ref):
            return f"output {k} has shape {list(o.shape)}, expected {list(np.shape(ref))}"
        if np.isfinite(o).all() and not o.any():
            return f"output {k} is all zeros"
        if np.isfinite(o).all() and np.ptp(o) == 0:
            return f"output {k} is the constant {o.flat[0]:.6g}"
    verdict = compare(outputs, references, CANARY_SPEC.atol, CANARY_SPEC.rtol)
    return None if verdict.ok else verdict.message


def canary_verdict(reason: str) -> Verdict:
    return Verdict("infra_error", f"{CANARY_MESSAGE}: {reason}")
