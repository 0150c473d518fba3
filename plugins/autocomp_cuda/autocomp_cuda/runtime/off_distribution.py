"""Trial data off a problem's own distribution: transformed inputs (``input_plan`` says
which trial draws from which map) and re-drawn parameters where the problem initialises
them to constants. The reference and candidate workers make the same data from the same
seeds; the candidate gets the reference's state dict, re-drawn values included.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from ..input_plan import NATIVE, VARIANTS


def _map(variant: str, rng: random.Random) -> tuple[float, float]:
    """(a, b) of ``x -> a * x + b`` for one input of one trial."""
    if variant == "signed":
        s = 2 ** rng.uniform(0, 2)
        return 2 * s, -s
    if variant in ("positive", "negative"):
        a, b = rng.uniform(0.5, 1.0), rng.uniform(2.0, 4.0)
        return (a, b) if variant == "positive" else (-a, -b)
    if variant == "wide":
        s = 2 ** rng.uniform(4, 7)
        return 2 * s, -s
    raise ValueError(f"unknown input variant {variant!r} (known: {', '.join(VARIANTS)})")


def transform_inputs(inputs: list[Any], variant: str, seed: int) -> list[Any]:
    """The problem's inputs of one trial under ``variant``: each floating tensor mapped by
    ``x -> a * x + b`` (its own a, b, drawn from the seed); integer, boolean and non-tensor
    inputs (indices, targets, masks, sizes) as drawn."""
    if variant == NATIVE:
        return inputs
    rng = random.Random(f"{variant}:{seed}")
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            a, b = _map(variant, rng)
            x = (x * a + b).to(x.dtype)
        out.append(x)
    return out


def undefined_reason(
    out: torch.Tensor, out64: torch.Tensor, ratio: float, limit: float = 0.5
) -> str | None:
    """Why a trial's reference cannot judge a candidate on these inputs (None: it can): the
    float64 output is not finite (outside the problem's domain: a log of a negative), or the
    problem's own float32 output is more than ``limit`` tolerances from it (overflow, lost
    precision: no float32 program could be held to the tolerance there)."""
    if out64.is_floating_point() and not bool(torch.isfinite(out64).all()):
        return "the float64 reference is not finite"
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        return "the float32 reference is not finite"
    if not math.isfinite(ratio) or ratio > limit:
        return f"the float32 reference is {ratio:.3g}x the tolerance from float64"
    return None


def redraw_constants(model: torch.nn.Module, seed: int) -> list[str]:
    """Give each floating parameter and buffer whose elements are all equal (LayerNorm's and
    BatchNorm's weight 1 and bias 0, running statistics 0 and 1, zeroed biases) random values
    around that constant: ``c + u * max(|c|, 1) / 2`` with ``u`` uniform in [-1, 1], so a 1
    stays positive (a scale, a variance) and a 0 becomes signed. A program that ignores
    such a weight or bias is right at the constant only. Returns the names changed."""
    generator = torch.Generator().manual_seed(seed ^ 0xC0457)
    changed = []
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if not tensor.is_floating_point() or tensor.numel() < 2 or tensor.is_meta:
                continue
            flat = tensor.detach().reshape(-1)
            first = flat[0]
            if not bool((flat == first).all()) or not bool(torch.isfinite(first)):
                continue
            c = float(first)
            u = torch.rand(tensor.shape, generator=generator, dtype=torch.float64) * 2 - 1
            tensor.copy_((c + u * max(abs(c), 1.0) / 2).to(tensor.dtype))
            changed.append(name)
    return changed
