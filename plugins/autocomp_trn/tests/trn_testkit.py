"""Helpers for the trn tests: small ad-hoc problems for rule tests and an in-process runner."""

from __future__ import annotations

from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input, ProblemSpec, Work

HEADER = (
    "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
    "import neuronxcc.nki.isa as nisa\n\n\n"
)


def problem(inputs: list[Input], outputs, reference, atol=1e-5, rtol=1e-5, **kw) -> ProblemSpec:
    return ProblemSpec(
        id="test/adhoc",
        title="ad hoc",
        description="",
        inputs=inputs,
        outputs=outputs,
        reference=reference,
        atol=atol,
        rtol=rtol,
        work=lambda ins: Work(),
        baseline="",
        **kw,
    )


#: y = 2x on one [128, 512] tile: the smallest problem a rule test needs
DOUBLE = problem([Input("x", (128, 512))], [((128, 512), "float32")], lambda x: (2 * x,))
#: y = x @ w for x [128, 128] laid out transposed (xT), w [128, 512], bf16 in
MATMUL = problem(
    [Input("xT", (128, 128), "bfloat16", "uniform"), Input("w", (128, 512), "bfloat16", "uniform")],
    [((128, 512), "float32")],
    lambda xT, w: (xT.T @ w,),
    atol=1e-3,
    rtol=1e-3,
)


def run(body: str, spec: ProblemSpec = DOUBLE, generation: str = "trn1", **kw) -> dict:
    """Evaluate a kernel whose body follows the standard NKI imports."""
    return emulate(spec, HEADER + body, generation=generation, **kw)
