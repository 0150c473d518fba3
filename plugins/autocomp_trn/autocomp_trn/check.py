"""Comparing kernel outputs with the float64 reference: per-element tolerance, non-finite values
and constant outputs (the known false pass of an all-zero result) are all refused."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    worst_ratio: float = 0.0  # worst |err| / tolerance over all outputs and seeds


def compare(
    outputs: list[np.ndarray], references: list[np.ndarray], atol: float, rtol: float
) -> Comparison:
    """``outputs``/``references``: one array per output, leading axis = seed."""
    worst = 0.0
    for k, (out, ref) in enumerate(zip(outputs, references)):
        o = np.asarray(out, dtype=np.float64)
        r = np.asarray(ref, dtype=np.float64)
        if o.shape != r.shape:
            return Comparison(
                False, f"output {k} has shape {list(o.shape[1:])}, expected {list(r.shape[1:])}"
            )
        finite = np.isfinite(o)
        if not finite.all():
            bad = int((~finite).sum())
            first = np.argwhere(~finite)[0]
            where_seed, where = int(first[0]), tuple(int(i) for i in first[1:])
            return Comparison(
                False,
                f"output {k} holds {bad} NaN/Inf values (first at {list(where)}, on random "
                f"input {where_seed + 1} of {o.shape[0]}): an overflow (e.g. exp of "
                "unshifted values), or elements never written or computed from memory "
                "nothing wrote (fresh SBUF/PSUM tiles hold NaN until written)",
            )
        for s in range(o.shape[0]):
            if np.ptp(o[s]) == 0 and np.ptp(r[s]) > 0:
                return Comparison(
                    False,
                    f"output {k} is constant ({o[s].flat[0]:.6g} everywhere) but the "
                    "reference is not",
                )
        for s in range(
            o.shape[0]
        ):  # one seed at a time, in place: outputs can be tens of millions of elements
            err = o[s] - r[s]
            np.abs(err, out=err)
            tol = np.abs(r[s])
            tol *= rtol
            tol += atol
            # |err| / tol, where a zero tolerance (atol = rtol = 0 at a zero reference) allows
            # nothing: 0/0 would be NaN, which compares false and would pass any error
            ratio = np.divide(err, tol, out=np.where(err > 0, np.inf, 0.0), where=tol > 0)
            seed_worst = float(ratio.max())
            worst = max(worst, seed_worst)
            if seed_worst > 1.0:
                bad = int((ratio > 1.0).sum())
                where = [int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape)]
                expected, got = r[s][tuple(where)], o[s][tuple(where)]
                return Comparison(
                    False,
                    f"output {k} differs from the reference at {bad} of {ratio.size} elements "
                    f"(on random input {s + 1} of {o.shape[0]}); worst at {where}: expected "
                    f"{expected:.6g}, got {got:.6g} (allowed |err| <= {atol:g} + {rtol:g} x "
                    "|expected|)",
                    worst,
                )
    return Comparison(True, "", worst)
