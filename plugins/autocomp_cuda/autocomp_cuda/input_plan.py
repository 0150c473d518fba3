"""Which input distribution each trial of an evaluation draws from (no torch here: the engine
plans, the workers in ``runtime/input_variants.py`` transform).

An imported problem's own ``get_inputs`` draws from one narrow distribution (KernelBench's
``torch.rand``: [0, 1)), where many wrong programs agree with the reference: ReLU as the
identity, an L1 norm without ``abs``, max-pool padded with 0 instead of -inf, a hinge loss
without its clamp, a min-reduction whose accumulator starts at 1, a matmul on fp16-rounded
inputs (rounding errors that cancel on positive data). So besides the problem's own inputs
(``native``), trials draw from maps of them that keep shapes, dtypes and integer inputs:

* ``signed``: every floating input ``x -> (2x - 1) * s``, ``s`` in [1, 4]: both signs;
* ``positive``: ``x -> x * s + c``, ``s`` in [0.5, 1], ``c`` in [2, 4]: every value above 1
  (a min accumulator started at 1 shows);
* ``negative``: the negation of ``positive``: every value below -1 (a max accumulator
  started at 0, a padding of 0 where it must be -inf);
* ``wide``: ``x -> (2x - 1) * S``, ``S`` in [16, 128]: large values (exponentials without
  their max subtracted overflow).

A trial whose float64 reference is not finite, or whose float32 reference is more than half
the tolerance from it (the transformed inputs leave the domain where the problem is defined
or well conditioned: ``log``, ``sqrt``, probabilities, an ``exp`` that overflows), falls back
to ``native``; the reference worker records which trials did and why.
"""

from __future__ import annotations

import random

NATIVE = "native"
OFF_DISTRIBUTION = ("signed", "positive", "negative", "wide")
VARIANTS = (NATIVE, *OFF_DISTRIBUTION)


def correctness_plan(trials: int, off_distribution: bool) -> list[str]:
    """The variant of each correctness trial: the problem's own inputs first, then each
    off-distribution map in turn (so five trials see every one of them)."""
    if not off_distribution:
        return [NATIVE] * trials
    order = [NATIVE, *OFF_DISTRIBUTION]
    return [order[k % len(order)] for k in range(trials)]


def variant_for(seed: int, allowed: list[str] | tuple[str, ...]) -> str:
    """A timed call's variant, drawn from its input seed among ``allowed``: the held (checked)
    sets and the freshly drawn (unchecked) ones follow the same mix, so the inputs do not tell
    a candidate which timed calls are checked."""
    if not allowed:
        return NATIVE
    return random.Random(seed ^ 0x0FF0D15).choice(list(allowed))


def plan(trial_seeds: list[int], trials: int, off_distribution: bool) -> list[str]:
    """The variant of every input set an evaluation's reference computes: the correctness
    trials' (``correctness_plan``), then the held sets' (``variant_for`` their seeds)."""
    held = [
        variant_for(seed, VARIANTS if off_distribution else (NATIVE,))
        for seed in trial_seeds[trials:]
    ]
    return correctness_plan(trials, off_distribution) + held
