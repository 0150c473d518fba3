"""Output comparison. Runs only in trusted processes (the judge, the reference worker).

The error of one output is the largest element-wise ratio
``|out - ref64| / (atol * scale + rtol * |ref64|)``, where ``ref64`` is the reference run in
float64 and ``scale`` is the RMS of ``ref64``. A ratio of at most 1 passes. Scaling ``atol``
by the output's own magnitude means an all-zero answer to a softmax over 100k columns
(outputs near 1e-5) fails, where a fixed 1e-4 absolute tolerance would let it pass.
Integer and bool outputs must match exactly. A problem may set ``atol``/``rtol``; otherwise
they follow the output's dtype (``problemset.DTYPE_TOLERANCE``): a half-precision kernel is judged
against what half precision can hold, a float32 one against float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import problemset


def tolerance_for(
    dtype: torch.dtype, atol: float | None = None, rtol: float | None = None
) -> tuple[float, float]:
    """The problem's tolerances where it sets them, else the output dtype's defaults."""
    return problemset.tolerance_for(str(dtype).removeprefix("torch."), atol, rtol)


@dataclass
class Verdict:
    ok: bool
    error_ratio: float
    reason: str = ""


def error_ratio(out: torch.Tensor, ref64: torch.Tensor, atol: float, rtol: float) -> float:
    """Worst element-wise error in units of the tolerance (0 = exact, >1 = fails)."""
    if out.shape != ref64.shape:
        return math.inf
    if out.numel() == 0:
        return 0.0
    if not ref64.is_floating_point():
        return 0.0 if torch.equal(out.to(ref64.dtype), ref64) else math.inf
    ref = ref64.double()
    cand = out.double()
    finite = torch.isfinite(ref)
    # Non-finite reference values must be reproduced exactly (same inf sign, NaN for NaN).
    if not bool(finite.all()):
        bad = ~finite
        same = (cand[bad] == ref[bad]) | (torch.isnan(cand[bad]) & torch.isnan(ref[bad]))
        if not bool(same.all()):
            return math.inf
        ref, cand = ref[finite], cand[finite]
        if ref.numel() == 0:
            return 0.0
    if not bool(torch.isfinite(cand).all()):
        return math.inf
    scale = float(ref.pow(2).mean().sqrt())
    if scale == 0.0:
        scale = 1.0
    allowed = atol * scale + rtol * ref.abs()
    return float(((cand - ref).abs() / allowed).max())


def strides_match(shape: tuple[int, ...], got: list[int], want: list[int]) -> bool:
    """Same strides wherever they matter: a dimension of size 1 is never stepped over, and an
    empty tensor has no layout."""
    if len(got) != len(shape) or len(want) != len(shape):
        return False
    return math.prod(shape) == 0 or all(n == 1 or g == w for n, g, w in zip(shape, got, want))


def check_output(
    out: torch.Tensor,
    expected: torch.Tensor,
    dtype: torch.dtype,
    atol: float | None,
    rtol: float | None,
    stride: list[int] | None = None,
    expected_stride: list[int] | None = None,
) -> Verdict:
    """Exact type, shape, ``dtype`` (the reference's own output dtype) and strides (``stride``:
    the output's as forward returned it, before any copy made it dense; ``expected_stride``:
    the reference output's) first, then values against ``expected``: the float64 reference
    for floating outputs, the exact one otherwise. A broadcast (stride 0), transposed or
    gapped output holding the right values is refused: its layout is not the reference's."""
    atol, rtol = tolerance_for(dtype, atol, rtol)
    if type(out) is not torch.Tensor:
        return Verdict(False, math.inf, f"output is {type(out).__name__}, not a plain torch.Tensor")
    if tuple(out.shape) != tuple(expected.shape):
        return Verdict(
            False, math.inf, f"output shape {tuple(out.shape)} != expected {tuple(expected.shape)}"
        )
    if out.dtype != dtype:
        return Verdict(False, math.inf, f"output dtype {out.dtype} != expected {dtype}")
    if expected_stride is not None:
        got = list(out.stride()) if stride is None else stride
        if not strides_match(tuple(out.shape), got, expected_stride):
            return Verdict(
                False,
                math.inf,
                f"output strides {tuple(got)} != the reference's {tuple(expected_stride)}",
            )
    ratio = error_ratio(out, expected, atol, rtol)
    if ratio <= 1.0:
        return Verdict(True, ratio)
    if math.isinf(ratio):
        reason = "values differ (non-finite values or integer mismatch)"
    else:
        diff = (out.double() - expected.double()).abs()
        reason = (
            f"max |diff| {float(diff.max()):.3g}, mean |diff| {float(diff.mean()):.3g}; "
            f"error is {ratio:.3g}x the tolerance (atol={atol:g} x output RMS, rtol={rtol:g})"
        )
    return Verdict(False, ratio, reason)
