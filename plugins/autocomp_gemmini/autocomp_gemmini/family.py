"""Problem families: what a program may assume about its shape, and the held-out shape.

A program is searched at one shape but must be right at every shape of its family, so the
engine's held-out check (`Backend.held_out_problem`) runs the search's best programs once
more at another one. The rule, per family (the prompt states what a program may assume,
never the held-out shape):

- GEMM: GEMM_M, GEMM_N and GEMM_K may be any multiples of their *grain*: the largest power
  of two dividing the searched size, at most 64 (so a program may tile by any power of two
  up to 64 that divides the size, as the baseline tiles by DIM). The held-out shape changes
  every dimension and keeps its grain: a size above its grain loses one grain (3136 -> 3072,
  256 -> 192), a size equal to it doubles (64 -> 128); then, while the work is above the
  searched shape's, the largest size that can loses one more grain (32x1024x512 ->
  64x576x448). Work is above the searched shape's only where no size can shrink further
  (every size a single grain: at most 64x64x64 -> 128x128x128).
- Convolution: batch, channels, kernel, stride and padding are as stated; the image size is
  free (CONV_OUT_DIM follows from CONV_IN_DIM). The held-out image is 4 strides narrower, so
  the output loses 4 rows and 4 columns, and its last block of output columns changes.
- ADMM: none. The problem is one solver instance (a 12-state, 4-input model on a 4x4 fp32
  array) whose bound is computed from work and bytes given for those sizes; another size is
  another instance, not a shape the prompt describes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalog import Spec

#: the largest power of two a GEMM program may tile a dimension by without a remainder
MAX_GRAIN = 64
#: strides the held-out convolution image loses on each side
CONV_SHRINK_STRIDES = 4


def grain(size: int) -> int:
    """The largest power of two dividing `size`, at most MAX_GRAIN."""
    return min(size & -size, MAX_GRAIN)


def held_out_gemm(sizes: list[int]) -> list[int]:
    """Every size changed, keeping its grain; no more work than the searched shape's where
    the sizes allow (see the module's note)."""
    grains = [grain(s) for s in sizes]
    out = [s - g if s > g else 2 * g for s, g in zip(sizes, grains, strict=True)]
    while math.prod(out) > math.prod(sizes):
        shrinkable = [i for i, g in enumerate(grains) if g < out[i] < sizes[i]]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: out[j])
        out[i] -= grains[i]
    return out


def conv_out_dim(in_dim: int, kdim: int, stride: int, pad: int) -> int:
    return (in_dim + 2 * pad - kdim) // stride + 1


def held_out_spec(spec: Spec) -> Spec | None:
    """The spec at the family's held-out shape (a function of the spec only), or None."""
    p = dict(spec.params)
    if spec.family == "gemm":
        m, n, k = held_out_gemm([p["gemm_m"], p["gemm_n"], p["gemm_k"]])
        p.update(gemm_m=m, gemm_n=n, gemm_k=k)
        tag = f"{m}x{n}x{k}"
    elif spec.family == "conv":
        in_dim = p["conv_in_dim"] - CONV_SHRINK_STRIDES * p["conv_stride"]
        if in_dim < p["conv_kdim"]:
            return None  # too small an image to shrink: no sibling below it
        out = conv_out_dim(in_dim, p["conv_kdim"], p["conv_stride"], p["conv_pad"])
        p.update(conv_in_dim=in_dim, conv_out_dim=out)
        tag = f"{in_dim}x{in_dim}"
    else:
        return None  # ADMM: one solver instance, see the module's note
    held = replace(spec, id=f"{spec.id}@held-out-{tag}", params=p)
    return replace(held, description=f"{spec.description} Held-out shape: {held.shape()}.")


def rule(spec: Spec) -> str:
    """The family's promise to a program, for the prompt."""
    p = spec.params
    if spec.family == "gemm":
        grains = ", ".join(
            f"{macro} of {grain(p[macro.lower()])}" for macro in ("GEMM_M", "GEMM_N", "GEMM_K")
        )
        return (
            "Write every size with the macros (GEMM_M, GEMM_N, GEMM_K, DIM), never as numbers: "
            "your program must be right at every shape of this GEMM family, and it is also run "
            f"at another one. A shape of the family has each size a multiple of its grain ({grains}); "
            "a tiling may rely on that and nothing more about the sizes."
        )
    if spec.family == "conv":
        return (
            "Write every size with the macros (CONV_*, DIM), never as numbers: your program must "
            "be right at every image size of this convolution family, and it is also run at "
            "another one. Batch, channels, kernel, stride and padding stay as stated; "
            "CONV_IN_DIM can be any size of at least CONV_KDIM, with CONV_OUT_DIM = (CONV_IN_DIM + 2*CONV_PAD - "
            "CONV_KDIM) / CONV_STRIDE + 1, so handle a partial last block of output columns."
        )
    return ""
