"""The catalog of shipped problems: listing, loading and numpy gold results.

Each problem is a folder under `problems/<family>/` holding `problems.toml` (one table
per problem: id, description, parameters) plus the family's `baseline.c` and `vendor.c`
and its harness in `harness/harness_<family>.c`. The harness fills its inputs with a
counter-based hash that `inputs.py` mirrors, so the gold result is computed here in
numpy without trusting anything the candidate's process reports about its inputs.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from autocomp_core import Problem

from . import family as families
from .admm import admm_gold
from .inputs import fill_acc, fill_elem
from .toolchain import PACKAGE_DIR

PROBLEMS_DIR = PACKAGE_DIR / "problems"
FAMILIES = ("gemm", "conv", "admm")


def store_unit(acc: np.ndarray, scale: float, relu: bool) -> np.ndarray:
    """The accumulator-to-int8 path: float32 scale, round half to even, ReLU, saturate."""
    y = np.rint(np.asarray(acc, np.int64).astype(np.float32) * np.float32(scale)).astype(np.float64)
    if relu:
        y = np.maximum(y, 0)
    return np.clip(y, -128, 127).astype(np.int8)


@dataclass(frozen=True)
class Spec:
    """A problem's harness parameters, as shipped in problems.toml."""

    id: str
    family: str
    description: str
    params: dict
    requires: dict  # hardware fields the problem needs (e.g. fp32, DIM 4)

    def defines(self) -> dict[str, str]:
        """The problem's macros (the seed is not one: the evaluator writes it into the linked
        program, as the uint32 harness_params.seed, so no compile sees it)."""
        return {k.upper(): _c_literal(v) for k, v in self.params.items() if not isinstance(v, list)}

    def shape(self) -> str:
        """The problem's shape as text (for the record of what an evaluation ran)."""
        p = self.params
        if self.family == "gemm":
            return f"M={p['gemm_m']}, N={p['gemm_n']}, K={p['gemm_k']}"
        if self.family == "conv":
            return (
                f"batch={p['conv_batch']}, in={p['conv_in_dim']}x{p['conv_in_dim']}x{p['conv_in_ch']}, "
                f"out_ch={p['conv_out_ch']}, kernel={p['conv_kdim']}, stride={p['conv_stride']}"
            )
        return f"nx={p['admm_nx']}, nu={p['admm_nu']}, horizon={p['admm_horizon']}"

    def shapes(self) -> list[int]:
        """The sizes that tell a problem from its siblings (the playbook and reuse compare them)."""
        p = self.params
        if self.family == "gemm":
            return [p["gemm_m"], p["gemm_n"], p["gemm_k"]]
        if self.family == "conv":
            return [
                p["conv_batch"], p["conv_in_dim"], p["conv_in_ch"], p["conv_out_ch"],
                p["conv_kdim"], p["conv_stride"],
            ]  # fmt: skip
        return [p["admm_nx"], p["admm_nu"], p["admm_horizon"]]

    def dtypes(self) -> list[str]:
        return [str(self.requires.get("dtype", "int8"))]

    @property
    def macs(self) -> int:
        p = self.params
        if self.family == "gemm":
            return p["gemm_m"] * p["gemm_n"] * p["gemm_k"]
        if self.family == "conv":
            return (
                p["conv_batch"]
                * p["conv_out_dim"] ** 2
                * p["conv_out_ch"]
                * p["conv_kdim"] ** 2
                * p["conv_in_ch"]
            )
        return int(p["macs"])

    def min_bytes(self, elem_bytes: int) -> int:
        """Bytes every correct program must move between DRAM and the accelerator."""
        p = self.params
        if self.family == "gemm":
            m, n, k = p["gemm_m"], p["gemm_n"], p["gemm_k"]
            return (m * k + k * n + m * n) * elem_bytes + n * 4
        if self.family == "conv":
            inp = p["conv_batch"] * p["conv_in_dim"] ** 2 * p["conv_in_ch"]
            w = p["conv_kdim"] ** 2 * p["conv_in_ch"] * p["conv_out_ch"]
            out = p["conv_batch"] * p["conv_out_dim"] ** 2 * p["conv_out_ch"]
            return (inp + w + out) * elem_bytes + p["conv_out_ch"] * 4
        return int(p["min_bytes"])


def _c_literal(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v) + "f"
    return str(v)


@lru_cache(maxsize=1)
def specs() -> dict[str, Spec]:
    out: dict[str, Spec] = {}
    for family in FAMILIES:
        path = PROBLEMS_DIR / family / "problems.toml"
        if not path.exists():
            continue
        data = tomllib.loads(path.read_text())
        for entry in data["problem"]:
            out[entry["id"]] = Spec(
                id=entry["id"],
                family=family,
                description=entry["description"],
                params=dict(entry["params"]),
                requires=dict(entry.get("requires", {})),
            )
    return out


def baseline_path(spec: Spec) -> Path:
    return PROBLEMS_DIR / spec.family / "baseline.c"


def vendor_path(spec: Spec) -> Path:
    return PROBLEMS_DIR / spec.family / "vendor.c"


def context(spec: Spec) -> str:
    p = spec.params
    defines = ", ".join(f"{k}={v}" for k, v in spec.defines().items())
    head = (
        f"{spec.description}\nThe candidate is the C function `solution()` with the baseline's signature; "
        f"the harness calls it once between the start and the end of the measured region and checks "
        f"its output bit for bit (fp32: within 1e-4 relative). These macros are #defined before your code: "
        f"{defines}. gemmini.h is already included; do not add #include lines."
    )
    if spec.family == "gemm":
        head += (
            f"\nC[{p['gemm_m']}][{p['gemm_n']}] = {'relu(' if p['gemm_act'] else '('}round(GEMM_SCALE * "
            f"(A[{p['gemm_m']}][{p['gemm_k']}] x B[{p['gemm_k']}][{p['gemm_n']}] + bias[{p['gemm_n']}]))), "
            "saturated to int8; bias is added to every row."
        )
    elif spec.family == "conv":
        head += (
            "\nNHWC input, weights [kh][kw][in_ch][out_ch], bias per output channel; output = "
            "act(round(CONV_SCALE * (conv + bias))) saturated to int8."
        )
    rule = families.rule(spec)
    return head + ("\n" + rule if rule else "")


def spec_of(problem: Problem) -> Spec | None:
    """The Spec a problem built outside the catalog carries in its metadata (the fidelity
    reader's problems: the published programs' shapes), or None."""
    meta = problem.metadata
    if meta.get("family") not in FAMILIES or not isinstance(meta.get("params"), dict):
        return None
    return Spec(
        id=problem.id,
        family=meta["family"],
        description=problem.description,
        params=dict(meta["params"]),
        requires=dict(meta.get("requires") or {}),
    )


def to_problem(spec: Spec) -> Problem:
    path = baseline_path(spec)
    return Problem(
        id=spec.id,
        description=spec.description,
        baseline_code=path.read_text(),
        baseline_path=path,
        context=context(spec),
        metadata={
            "family": spec.family,
            "shapes": spec.shapes(),
            "dtypes": spec.dtypes(),
            "params": spec.params,
            "requires": spec.requires,
            "macs": spec.macs,
            "vendor_path": str(vendor_path(spec)),
        },
    )


# ---------------------------------------------------------------------------- gold results
def gold(spec: Spec, seed: int, is_float: bool) -> np.ndarray:
    """The expected output buffer(s), concatenated as the harness dumps them."""
    if spec.family == "gemm":
        return gemm_gold(spec.params, seed)
    if spec.family == "conv":
        return conv_gold(spec.params, seed)
    return admm_gold(spec.params, seed)


def gemm_gold(p: dict, seed: int) -> np.ndarray:
    m, n, k = p["gemm_m"], p["gemm_n"], p["gemm_k"]
    a = fill_elem(seed * 4 + 1, m * k, False).reshape(m, k).astype(np.int64)
    b = fill_elem(seed * 4 + 2, k * n, False).reshape(k, n).astype(np.int64)
    bias = fill_acc(seed * 4 + 3, n, False).astype(np.int64)
    if p.get("gemm_no_bias"):  # the harness passes zeros (harness_gemm.c)
        bias = np.zeros_like(bias)
    acc = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64) + bias
    return store_unit(acc, p["gemm_scale"], bool(p["gemm_act"]))


def conv_gold(p: dict, seed: int) -> np.ndarray:
    bsz, ind, ic, oc = p["conv_batch"], p["conv_in_dim"], p["conv_in_ch"], p["conv_out_ch"]
    kd, st, pad, od = p["conv_kdim"], p["conv_stride"], p["conv_pad"], p["conv_out_dim"]
    x = (
        fill_elem(seed * 4 + 1, bsz * ind * ind * ic, False)
        .reshape(bsz, ind, ind, ic)
        .astype(np.float64)
    )
    w = fill_elem(seed * 4 + 2, kd * kd * ic * oc, False).reshape(kd, kd, ic, oc).astype(np.float64)
    bias = fill_acc(seed * 4 + 3, oc, False).astype(np.int64)
    xp = np.zeros((bsz, ind + 2 * pad, ind + 2 * pad, ic))
    xp[:, pad : pad + ind, pad : pad + ind] = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (kd, kd), axis=(1, 2))[:, ::st, ::st][
        :, :od, :od
    ]
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(bsz * od * od, kd * kd * ic)
    acc = (cols @ w.reshape(-1, oc)).astype(np.int64) + bias
    return store_unit(acc, p["conv_scale"], bool(p["conv_act"])).reshape(bsz, od, od, oc)
