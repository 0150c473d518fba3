"""The original system's published Gemmini programs, read as measured programs (issue 31).

The Autocomp repository publishes, per GEMM shape N (sols/exo/, harness harnesses/exo/testN.c)
and per convolution shape N (sols/exo-conv/, harnesses/exo-conv/testN.c), the programs its paper
compares on FireSim: `solN_exo_baseline.c` (the unoptimized Exo program, the search's start),
`solN_exo_opt.c` (the hand-tuned Exo schedule) and `solN_gemmini_baseline.c` (the Gemmini
software library). Each becomes a `MeasuredProgram` on a problem of that shape built here (the
shape read from the harness's #defines), its code mapped onto our gemmini.h and harness:

- the Exo programs call the paper's ISA names (mvin, preload, compute_preloaded, config_ld, ...):
  each call is renamed to the gemmini.h macro with the same operands, and config_ex / config_ld,
  whose argument lists differ, call two small functions added in front; their `solution` is
  renamed and called from a `solution` with our harness's signature (the GEMM harness's bias is
  all zeros: the published GEMMs compute C = A x B);
- the library programs are one call of the library; the GEMM one keeps its call with the
  harness's macros written out, the convolution one becomes our gemmini.h's `tiled_conv_auto`
  (another argument list); where a shape has no published library program, the same call at
  that shape is used.

`MeasuredProgram.adapted` says what was changed, per program.

What "measured" is: the paper gives no per-shape cycles (its per-shape results are bar charts
of speed-ups), only geometric means over the shapes: Autocomp is 5.6x faster than the library,
2.9x faster than the unoptimized Exo programs and 1.4x faster than the hand-tuned ones on GEMM,
2.7x and 1.1x faster than the library and the hand-tuned programs on convolution (arXiv
2505.18574 v2, abstract; the 2.9x from the authors' blog of 2025-06-06). So "measured" here is a
program's time relative to the library's on its shape, from those means (library 1, unoptimized
Exo 2.9/5.6, hand-tuned 1.4/5.6; convolution: hand-tuned 1.1/2.7): modelled/measured is then the
model's cycles per library time, equal across a chain exactly when the model reproduces the
paper's ratios. The paper gives no ratio for the unoptimized Exo convolutions: they are read
(`published_programs`) but are not measured programs.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FidelityUnsupported, MeasuredProgram, Problem

#: the paper's geometric-mean speed-ups of Autocomp over each program kind (see the docstring)
PAPER_SPEEDUP = {
    "gemm": {"library": 5.6, "unoptimized": 2.9, "hand-tuned": 1.4},
    "conv": {"library": 2.7, "hand-tuned": 1.1},
}
KINDS = ("unoptimized", "library", "hand-tuned")  # chain order: the search's start first
FILES = {
    "unoptimized": "sol{n}_exo_baseline.c",
    "hand-tuned": "sol{n}_exo_opt.c",
    "library": "sol{n}_gemmini_baseline.c",
}
FAMILY_DIRS = {"gemm": "exo", "conv": "exo-conv"}

# the paper's ISA names (its prompt's macros) -> the gemmini.h macro with the same operands
RENAMES = {
    "mvin": "gemmini_extended_mvin",
    "mvin2": "gemmini_extended_mvin2",
    "mvin3": "gemmini_extended_mvin3",
    "mvout": "gemmini_extended_mvout",
    "preload": "gemmini_extended_preload",
    "compute_preloaded": "gemmini_extended_compute_preloaded",
    "compute_accumulated": "gemmini_extended_compute_accumulated",
    "config_st": "gemmini_config_st",
    "fence": "gemmini_fence",
    "config_ex": "exo_config_ex",
    "config_ld": "exo_config_ld",
}
CALL = re.compile(r"(?<![\w.])(" + "|".join(sorted(RENAMES, key=len, reverse=True)) + r")(\s*\()")
# config_ex / config_ld take other argument lists than the gemmini.h macros
EXO_FUNCTIONS = """\
static inline void exo_config_ex(int dataflow, int act, int a_stride, bool a_transpose,
                                 bool b_transpose) {
  gemmini_extended_config_ex(dataflow, act, 0, a_stride, a_transpose, b_transpose);
}
static inline void exo_config_ld(uint64_t dram_stride, float scale, int spad_block_stride, int id) {
  gemmini_extended3_config_ld(dram_stride, scale, false, spad_block_stride, 1, id);
}
"""
SOLUTION = re.compile(r"\bsolution(\s*\()")
OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.floordiv,
}


@dataclass(frozen=True)
class Published:
    """One program read from the checkout, with the relative time the paper implies (None
    where the paper gives none)."""

    family: str  # "gemm" or "conv"
    shape: int  # N of solN / testN
    kind: str  # one of KINDS
    problem: Problem
    code: str
    source: str
    adapted: str
    relative_time: float | None


def relative_time(family: str, kind: str) -> float | None:
    speedups = PAPER_SPEEDUP[family]
    if kind not in speedups:
        return None
    return speedups[kind] / speedups["library"]


def harness_defines(text: str) -> dict[str, str]:
    """Object-like macros of a harness: name -> text (a // comment dropped)."""
    found = re.findall(r"^[ \t]*#define[ \t]+(\w+)[ \t]+(.*)$", text, re.M)
    return {name: value.split("//")[0].strip() for name, value in found}


def _int(defines: dict[str, str], name: str, path: str) -> int:
    """The integer value of a harness macro: a number, or + - * / of numbers and macros
    (C's integer division: `INP_ROWS (P+(R/2)*2)`)."""
    value = defines.get(name, "")

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in defines and node.id != name:
            return _int(defines, node.id, path)
        if isinstance(node, ast.BinOp) and type(node.op) in OPS:
            return OPS[type(node.op)](ev(node.left), ev(node.right))
        raise FidelityUnsupported(f"{path}: #define {name} is not an integer ({value!r})")

    try:
        tree = ast.parse(value.strip(), mode="eval")
    except SyntaxError:
        raise FidelityUnsupported(f"{path}: #define {name} is not an integer ({value!r})") from None
    return ev(tree.body)


def gemm_problem(n: int, defines: dict[str, str], path: str) -> Problem:
    m, k, nn = (_int(defines, f"MAT_DIM_{d}", path) for d in "IKJ")
    for flag, want in (("A_TRANSPOSE", 0), ("B_TRANSPOSE", 0), ("NO_BIAS", 1)):
        if _int(defines, flag, path) != want:
            raise FidelityUnsupported(
                f"{path}: {flag} = {defines.get(flag)}, this reader expects {want}"
            )
    params = {
        "gemm_m": m,
        "gemm_n": nn,
        "gemm_k": k,
        "gemm_act": 0,
        "gemm_scale": 1.0,
        "gemm_no_bias": 1,
    }
    return Problem(
        id=f"exo-gemm-{n}",
        description=f"The published Exo GEMM shape {n}: C[{m}][{nn}] = A[{m}][{k}] x B[{k}][{nn}], int8",
        baseline_code="",
        context="",
        metadata={"family": "gemm", "params": params, "requires": {}, "macs": m * nn * k},
    )


def conv_problem(n: int, defines: dict[str, str], path: str) -> Problem:
    kd, s_, p, q = (_int(defines, d, path) for d in ("R", "S", "P", "Q"))
    if kd != s_ or p != q:
        raise FidelityUnsupported(f"{path}: a non-square convolution ({kd}x{s_}, {p}x{q})")
    batch, ic, oc = (_int(defines, d, path) for d in ("N", "C", "K"))
    stride = _int(defines, "STRIDE", path)
    in_dim = _int(defines, "INP_ROWS", path)
    params = {
        "conv_batch": batch,
        "conv_in_dim": in_dim,  # the published programs take the input already padded
        "conv_in_ch": ic,
        "conv_out_ch": oc,
        "conv_kdim": kd,
        "conv_stride": stride,
        "conv_pad": 0,
        "conv_out_dim": p,
        "conv_act": 0,
        "conv_scale": 1.0,
    }
    macs = batch * p * p * oc * kd * kd * ic
    return Problem(
        id=f"exo-conv-{n}",
        description=(
            f"The published Exo convolution shape {n}: batch {batch}, {in_dim}x{in_dim}x{ic} "
            f"(padded) -> {p}x{p}x{oc}, {kd}x{kd} stride {stride}"
        ),
        baseline_code="",
        context="",
        metadata={"family": "conv", "params": params, "requires": {}, "macs": macs},
    )


def adapt_exo(code: str, family: str) -> tuple[str, str]:
    """An Exo program on our gemmini.h and harness, and what was changed."""
    if not SOLUTION.search(code):
        raise FidelityUnsupported("an Exo program without a solution() function")
    renamed = sorted(set(CALL.findall(code)), key=str)
    body = CALL.sub(lambda m: RENAMES[m.group(1)] + m.group(2), code)
    body = SOLUTION.sub(r"published_solution\1", body, count=1)
    if family == "gemm":
        wrapper = (
            "void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N],\n"
            "              const acc_t bias[GEMM_N], elem_t C[GEMM_M][GEMM_N]) {\n"
            "  (void)bias; /* all zeros: the published programs compute C = A x B */\n"
            "  published_solution((void *)A, (void *)B, (void *)C);\n"
            "  gemmini_fence(); /* the original harness fences after the program */\n}\n"
        )
    else:
        wrapper = (
            "void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],\n"
            "              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],\n"
            "              const acc_t bias[CONV_OUT_CH],\n"
            "              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]) {\n"
            "  published_solution((void *)input, (void *)weights, (void *)bias, (void *)output);\n"
            "  gemmini_fence(); /* the original harness fences after the program */\n}\n"
        )
    names = ", ".join(f"{old} -> {RENAMES[old]}" for old, _ in renamed)
    adapted = (
        f"calls renamed to gemmini.h ({names}); config_ex/config_ld as two functions added in "
        "front; solution renamed published_solution and called from a solution with the "
        "harness's signature, which then fences (as the original harness does after the program)"
    )
    return EXO_FUNCTIONS + body + "\n" + wrapper, adapted


def library_gemm(code: str | None, problem: Problem) -> tuple[str, str]:
    p = problem.metadata["params"]
    m, n, k = p["gemm_m"], p["gemm_n"], p["gemm_k"]
    call = (
        f"  tiled_matmul_auto({m}, {n}, {k}, &A[0][0], &B[0][0], NULL, &C[0][0], {k}, {n}, {n}, {n},\n"
        "                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY,\n"
        "                    NO_ACTIVATION, ACC_SCALE_IDENTITY, 0, false, false, false, false, false,\n"
        "                    0, WEIGHT_STATIONARY);\n"
    )
    if code is None:
        adapted = (
            "not published for this shape: the library call of the published shapes, at this shape"
        )
    else:
        if "tiled_matmul_auto" not in code:
            raise FidelityUnsupported("a GEMM library program that does not call tiled_matmul_auto")
        adapted = (
            "the published tiled_matmul_auto call with the harness's macros written out "
            "(sizes, strides, matrix names, no transposes, no bias)"
        )
    text = (
        "void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N],\n"
        "              const acc_t bias[GEMM_N], elem_t C[GEMM_M][GEMM_N]) {\n"
        "  (void)bias;\n" + call + "  gemmini_fence();\n}\n"
    )
    return text, adapted


def library_conv(code: str | None, problem: Problem) -> tuple[str, str]:
    p = problem.metadata["params"]
    call = (
        f"  tiled_conv_auto({p['conv_batch']}, {p['conv_in_dim']}, {p['conv_in_ch']}, "
        f"{p['conv_out_ch']}, {p['conv_out_dim']}, {p['conv_stride']}, 0, {p['conv_kdim']},\n"
        "                  &input[0][0][0][0], &weights[0][0][0][0], bias, &output[0][0][0][0],\n"
        "                  NO_ACTIVATION, ACC_SCALE_IDENTITY, WS);\n"
    )
    if code is None:
        adapted = "not published for this shape: our gemmini.h's tiled_conv_auto at this shape"
    else:
        if "tiled_conv_auto" not in code:
            raise FidelityUnsupported(
                "a convolution library program that does not call tiled_conv_auto"
            )
        adapted = (
            "the published tiled_conv_auto call as our gemmini.h's tiled_conv_auto (another "
            "argument list; same operation: pre-padded input, padding 0, the shape's stride and kernel)"
        )
    text = (
        "void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],\n"
        "              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],\n"
        "              const acc_t bias[CONV_OUT_CH],\n"
        "              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]) {\n"
        + call
        + "  gemmini_fence();\n}\n"
    )
    return text, adapted


def published_programs(source: Path) -> list[Published]:
    """Every program of every shape whose harness is in `source` (an Autocomp checkout)."""
    source = Path(source)
    first = source / "harnesses" / "exo" / "test0.c"
    if not first.is_file():
        raise FidelityUnsupported(
            f"{source} is not a checkout of the Autocomp repository: no {first.relative_to(source)}"
        )
    out: list[Published] = []
    for family, folder in FAMILY_DIRS.items():
        harnesses = sorted(
            (source / "harnesses" / folder).glob("test*.c"),
            key=lambda p: int(re.sub(r"\D", "", p.stem) or 0),
        )
        for harness in harnesses:
            n = int(re.sub(r"\D", "", harness.stem))
            rel = str(harness.relative_to(source))
            defines = harness_defines(harness.read_text())
            make = gemm_problem if family == "gemm" else conv_problem
            problem = make(n, defines, rel)
            for kind in KINDS:
                path = source / "sols" / folder / FILES[kind].format(n=n)
                code = path.read_text() if path.is_file() else None
                if kind == "library":
                    lib = library_gemm if family == "gemm" else library_conv
                    text, adapted = lib(code, problem)
                elif code is None:
                    continue  # no hand-tuned (or unoptimized) program for this shape
                else:
                    text, adapted = adapt_exo(code, family)
                out.append(
                    Published(
                        family=family,
                        shape=n,
                        kind=kind,
                        problem=problem,
                        code=text,
                        source=str(path.relative_to(source)) if code is not None else rel,
                        adapted=adapted,
                        relative_time=relative_time(family, kind),
                    )
                )
    return out


def measured_programs(source: Path) -> list[MeasuredProgram]:
    """The published programs the paper gives a (relative) time for, one chain per shape."""
    return [
        MeasuredProgram(
            chain=f"{p.problem.id}",
            step=KINDS.index(p.kind),
            name=p.kind,
            measured=p.relative_time,
            problem=p.problem,
            code=p.code,
            source=p.source,
            adapted=p.adapted,
        )
        for p in published_programs(source)
        if p.relative_time is not None
    ]
