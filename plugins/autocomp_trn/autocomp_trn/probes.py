"""Single-instruction probes in the current NKI API (``import nki``): one tiny kernel per
instruction (or per operator of one), each with a NumPy reference.

The differential check (``simdiff.py``) runs every probe through the emulator and through the
Neuron SDK's CPU simulator (``nki.simulate``) on the same inputs and compares the two; the
tests run every probe through the emulator against its NumPy reference, so a probe that
reaches the simulator is known to be a correct kernel.

A probe's kernel is the body between the loads of its inputs into SBUF (``ta``, ``tb``, ...,
one per input) and the store of ``res`` (an SBUF tile of the output's shape and dtype) to HBM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .problems.spec import Input, ProblemSpec, Work

#: the kernel's imports, as a current-API (NKI 0.8) kernel writes them
HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
P, F = 128, 512


@dataclass(frozen=True)
class Probe:
    name: str
    instruction: str  # the nki.isa instruction it exercises
    inputs: tuple[Input, ...]
    out: tuple[tuple[int, ...], str]
    body: str  # computes ``res`` from the SBUF tiles ta, tb, ...
    reference: Callable[..., np.ndarray]
    atol: float = 1e-5
    rtol: float = 1e-5
    #: the targets that have the instruction (the Trn3-only ones are refused elsewhere)
    generations: tuple[str, ...] = ("trn1", "trn2", "trn3")

    @property
    def code(self) -> str:
        names = [i.name for i in self.inputs]
        loads = "".join(
            f"    t{n} = nl.ndarray({i.shape}, dtype=nl.{i.dtype}, buffer=nl.sbuf)\n"
            f"    nisa.dma_copy(dst=t{n}, src={n})\n"
            for n, i in zip(names, self.inputs, strict=True)
        )
        shape, dtype = self.out
        body = "".join(f"    {line}\n" if line else "\n" for line in self.body.splitlines())
        return (
            f"{HEADER}\n\n@nki.jit\ndef probe({', '.join(names)}):\n{loads}"
            f"    res = nl.ndarray({shape}, dtype=nl.{dtype}, buffer=nl.sbuf)\n{body}"
            f"    out = nl.ndarray({shape}, dtype=nl.{dtype}, buffer=nl.shared_hbm)\n"
            "    nisa.dma_copy(dst=out, src=res)\n    return out\n"
        )

    def spec(self) -> ProblemSpec:
        """The probe as a problem: its inputs, reference and tolerance (no lower bound)."""
        ref = self.reference
        return ProblemSpec(
            id=f"probe/{self.name}",
            title=self.name,
            description=f"single-instruction probe of nisa.{self.instruction}",
            inputs=list(self.inputs),
            outputs=[self.out],
            reference=lambda *xs: (ref(*xs),),
            atol=self.atol,
            rtol=self.rtol,
            work=lambda ins: Work(),
            baseline="",
            entry="probe",
        )


def _x(name: str = "a", shape=(P, F), dtype: str = "float32", dist: str = "normal") -> Input:
    return Input(name, shape, dtype, dist)


AB = (_x("a"), _x("b"))
OUT = ((P, F), "float32")
ROW = ((P, 1), "float32")


def _gelu(x):
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _range_select(a, u):
    lo = (u.astype(np.float32) * np.float32(256)).astype(np.float64)
    hi = (u.astype(np.float32) * np.float32(256) + np.float32(128)).astype(np.float64)
    i = np.arange(a.shape[1])[None, :]
    return np.where((i >= lo) & (i < hi), a, -1000.0)


def _bn(a):
    return np.concatenate([a.mean(axis=1, keepdims=True), a.var(axis=1, keepdims=True)], axis=1)


def _replace_top8(a):
    out = a.copy()
    np.put_along_axis(out, np.argsort(-a, axis=1, kind="stable")[:, :8], -100.0, axis=1)
    return out


def _bf16(x):
    import ml_dtypes

    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def _scan(a, b):
    """res[:, j] = res[:, j-1] * a[:, j] + b[:, j], from 0."""
    out = np.zeros_like(a, dtype=np.float64)
    acc = np.zeros(a.shape[0])
    for j in range(a.shape[1]):
        acc = acc * a[:, j] + b[:, j]
        out[:, j] = acc
    return out


def _tt(op: str, fn) -> Probe:
    return Probe(
        f"tensor_tensor_{op}",
        "tensor_tensor",
        AB,
        OUT,
        f"nisa.tensor_tensor(dst=res, data1=ta, data2=tb, op=nl.{op})",
        fn,
    )


def _act(op: str, fn, dist: str = "normal", atol: float = 1e-5, rtol: float = 1e-4) -> Probe:
    return Probe(
        f"activation_{op}",
        "activation",
        (_x(dist=dist),),
        OUT,
        f"nisa.activation(dst=res, op=nl.{op}, data=ta)",
        fn,
        atol,
        rtol,
    )


def _reduce(op: str, fn, negate: bool = False) -> Probe:
    return Probe(
        f"tensor_reduce_{op}" + ("_negate" if negate else ""),
        "tensor_reduce",
        (_x(),),
        ROW,
        f"nisa.tensor_reduce(dst=res, op=nl.{op}, data=ta, axis=1, negate={negate}, keepdims=True)",
        lambda a: (-1 if negate else 1) * fn(a, axis=1, keepdims=True),
        1e-4,
        1e-5,
    )


PROBES: list[Probe] = [
    _tt("add", lambda a, b: a + b),
    _tt("subtract", lambda a, b: a - b),
    _tt("multiply", lambda a, b: a * b),
    _tt("maximum", np.maximum),
    _tt("minimum", np.minimum),
    Probe(
        "tensor_scalar_mul_add",
        "tensor_scalar",
        (_x(),),
        OUT,
        "nisa.tensor_scalar(dst=res, data=ta, op0=nl.multiply, operand0=2.5, op1=nl.add, "
        "operand1=1.0)",
        lambda a: a * 2.5 + 1.0,
    ),
    Probe(
        "tensor_scalar_column",
        "tensor_scalar",
        (_x(), _x("s", (P, 1))),
        OUT,
        "nisa.tensor_scalar(dst=res, data=ta, op0=nl.multiply, operand0=ts)",
        lambda a, s: a * s,
    ),
    _act("exp", np.exp),
    _act("tanh", np.tanh),
    _act("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
    _act("relu", lambda a: np.maximum(a, 0)),
    _act("silu", lambda a: a / (1 + np.exp(-a))),
    _act("gelu", _gelu, atol=1e-5, rtol=1e-4),
    _act("gelu_apprx_tanh", _gelu_tanh, atol=1e-5, rtol=1e-4),
    _act("abs", np.abs),
    _act("sqrt", np.sqrt, dist="positive"),
    _act("rsqrt", lambda a: 1 / np.sqrt(a), dist="positive"),
    Probe(
        "activation_scale_bias",
        "activation",
        (_x(), _x("c", (P, 1))),
        OUT,
        "nisa.activation(dst=res, op=nl.exp, data=ta, bias=tc, scale=0.5)",
        lambda a, c: np.exp(0.5 * a + c),
        1e-5,
        1e-4,
    ),
    Probe(
        "reciprocal",
        "reciprocal",
        (_x(dist="positive"),),
        OUT,
        "nisa.reciprocal(dst=res, data=ta)",
        lambda a: 1 / a,
        1e-6,
        1e-5,
    ),
    _reduce("add", np.sum),
    _reduce("maximum", np.max),
    _reduce("add", np.sum, negate=True),
    Probe(
        "nc_matmul_bf16",
        "nc_matmul",
        (_x("s", (P, P), "bfloat16", "uniform"), _x("m", (P, F), "bfloat16", "uniform")),
        OUT,
        "acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "nisa.nc_matmul(dst=acc, stationary=ts, moving=tm)\n"
        "nisa.tensor_copy(dst=res, src=acc)",
        lambda s, m: s.T @ m,
        1e-3,
        1e-3,
    ),
    Probe(
        "nc_matmul_accumulate",
        "nc_matmul",
        (_x("s", (P, P), "bfloat16", "uniform"), _x("m", (P, F), "bfloat16", "uniform")),
        OUT,
        "acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "nisa.nc_matmul(dst=acc, stationary=ts[0:64, :], moving=tm[0:64, :])\n"
        "nisa.nc_matmul(dst=acc, stationary=ts[64:128, :], moving=tm[64:128, :], accumulate=True)\n"
        "nisa.tensor_copy(dst=res, src=acc)",
        lambda s, m: s.T @ m,
        1e-3,
        1e-3,
    ),
    Probe(
        "nc_transpose",
        "nc_transpose",
        (_x("a", (P, P)),),
        ((P, P), "float32"),
        "tp = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)\n"
        "nisa.nc_transpose(dst=tp, data=ta)\n"
        "nisa.tensor_copy(dst=res, src=tp)",
        lambda a: a.T,
        1e-6,
        1e-5,
    ),
    Probe("dma_copy", "dma_copy", (_x(),), OUT, "nisa.dma_copy(dst=res, src=ta)", lambda a: a),
    Probe(
        "memset",
        "memset",
        (_x(),),
        OUT,
        "nisa.memset(dst=res, value=3.0)",
        lambda a: np.full(a.shape, 3.0),
    ),
    Probe(
        "tensor_copy", "tensor_copy", (_x(),), OUT, "nisa.tensor_copy(dst=res, src=ta)", lambda a: a
    ),
    Probe(
        "tensor_copy_to_bf16",
        "tensor_copy",
        (_x(),),
        ((P, F), "bfloat16"),
        "nisa.tensor_copy(dst=res, src=ta)",
        _bf16,
        1e-12,  # bit-exact: bf16 round-to-nearest-even
        0.0,
    ),
    Probe(
        "tensor_tensor_add_bf16",
        "tensor_tensor",
        (_x("a", dtype="bfloat16"), _x("b", dtype="bfloat16")),
        ((P, F), "bfloat16"),
        "nisa.tensor_tensor(dst=res, data1=ta, data2=tb, op=nl.add)",
        lambda a, b: _bf16(a + b),
        1e-12,
        0.0,
    ),
    Probe(
        "tensor_tensor_scan",
        "tensor_tensor_scan",
        (_x("a", dist="unit"), _x("b")),
        OUT,
        "nisa.tensor_tensor_scan(dst=res, data0=ta, data1=tb, initial=0.0, op0=nl.multiply, "
        "op1=nl.add)",
        _scan,
        1e-4,
        1e-4,
    ),
    Probe(
        "scalar_tensor_tensor",
        "scalar_tensor_tensor",
        AB,
        OUT,
        "nisa.scalar_tensor_tensor(dst=res, data=ta, op0=nl.multiply, operand0=2.0, op1=nl.add, "
        "operand1=tb)",
        lambda a, b: 2 * a + b,
    ),
    Probe(
        "tensor_scalar_reduce",
        "tensor_scalar_reduce",
        (_x(),),
        ROW,
        "t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.tensor_scalar_reduce(dst=t, data=ta, op0=nl.multiply, operand0=3.0, "
        "reduce_op=nl.add, reduce_res=res)",
        lambda a: 3 * a.sum(axis=1, keepdims=True),
        1e-3,
        1e-5,
    ),
    Probe(
        "tensor_partition_reduce",
        "tensor_partition_reduce",
        (_x(),),
        ((1, F), "float32"),
        "nisa.tensor_partition_reduce(dst=res, op=nl.add, data=ta)",
        lambda a: a.sum(axis=0, keepdims=True),
        1e-4,
        1e-5,
    ),
    Probe(
        "activation_reduce",
        "activation_reduce",
        (_x(),),
        ROW,
        "t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.activation_reduce(dst=t, op=nl.exp, data=ta, reduce_op=nl.add, reduce_res=res)",
        lambda a: np.exp(a).sum(axis=1, keepdims=True),
        1e-3,
        1e-4,
    ),
    Probe(
        "iota",
        "iota",
        (_x(),),
        ((P, F), "int32"),
        "nisa.iota(dst=res, pattern=[[1, 512]], offset=7, channel_multiplier=512)",
        lambda a: 7 + np.arange(P)[:, None] * F + np.arange(F)[None, :],
        0.5,
        0.0,
    ),
    Probe(
        "affine_select_causal",
        "affine_select",
        (_x(),),
        OUT,
        "nisa.affine_select(dst=res, pattern=[[-1, 512]], offset=0, channel_multiplier=1, "
        "on_true_tile=ta, on_false_value=-9984.0, cmp_op=nl.greater_equal)",
        lambda a: np.where(np.arange(P)[:, None] >= np.arange(F)[None, :], a, -9984.0),
    ),
    Probe(
        "bn_stats_aggr",
        "bn_stats",
        (_x(),),
        ((P, 2), "float32"),
        "st = nl.ndarray((128, 6), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.bn_stats(dst=st, data=ta)\n"
        "nisa.bn_aggr(dst=res, data=st)",
        _bn,
        1e-5,
        1e-4,
    ),
    Probe(
        "max8",
        "max8",
        (_x(),),
        ((P, 8), "float32"),
        "nisa.max8(dst=res, src=ta)",
        lambda a: -np.sort(-a, axis=1)[:, :8],
    ),
    Probe(
        "dma_transpose_2d",
        "dma_transpose",
        (_x("a", (64, P), "bfloat16"),),
        ((P, 64), "bfloat16"),
        "nisa.dma_transpose(dst=res, src=ta)",
        lambda a: a.T,
        1e-12,
        0.0,
    ),
    Probe(
        "range_select",
        "range_select",
        (_x(), _x("u", (P, 1), dist="unit")),
        OUT,
        "lo = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.tensor_scalar(dst=lo, data=tu, op0=nl.multiply, operand0=256.0)\n"
        "hi = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.tensor_scalar(dst=hi, data=tu, op0=nl.multiply, operand0=256.0, op1=nl.add, "
        "operand1=128.0)\n"
        "nisa.range_select(dst=res, on_true_tile=ta, comp_op0=nl.greater_equal, "
        "comp_op1=nl.less, bound0=lo, bound1=hi, on_false_value=-1000.0)",
        _range_select,
        generations=("trn2", "trn3"),
    ),
    Probe(
        "tensor_copy_predicated",
        "tensor_copy_predicated",
        AB,
        OUT,
        "mask = nl.ndarray((128, 512), dtype=nl.uint8, buffer=nl.sbuf)\n"
        "nisa.tensor_scalar(dst=mask, data=tb, op0=nl.greater, operand0=0.0)\n"
        "nisa.memset(dst=res, value=0.0)\n"
        "nisa.tensor_copy_predicated(dst=res, src=ta, predicate=mask)",
        lambda a, b: np.where(b > 0, a, 0.0),
    ),
    Probe(
        "nc_find_index8",
        "nc_find_index8",
        (_x(),),
        ((P, 8), "uint32"),
        "top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.max8(dst=top, src=ta)\n"
        "nisa.nc_find_index8(dst=res, data=ta, vals=top)",
        lambda a: np.argsort(-a, axis=1, kind="stable")[:, :8],
        0.5,
        0.0,
    ),
    Probe(
        "nc_match_replace8",
        "nc_match_replace8",
        (_x(),),
        OUT,
        "top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.max8(dst=top, src=ta)\n"
        "nisa.nc_match_replace8(dst=res, data=ta, vals=top, imm=-100.0)",
        _replace_top8,
    ),
    Probe(
        "nc_n_gather",
        "nc_n_gather",
        (_x(),),
        ((P, 64), "float32"),
        "idx = nl.ndarray((128, 64), dtype=nl.uint32, buffer=nl.sbuf)\n"
        "nisa.iota(dst=idx, pattern=[[8, 64]], offset=3, channel_multiplier=0)\n"
        "nisa.nc_n_gather(dst=res, data=ta, indices=idx)",
        lambda a: a[:, 3::8],
    ),
    Probe(
        "activate2_exp",
        "activate2",
        (_x(),),
        OUT,
        "nisa.activate2(dst=res, op=nl.exp, data=ta, imm0=2.0, imm1=1.0, op0=nl.multiply, "
        "op1=nl.subtract)",
        lambda a: np.exp(2 * a - 1),
        1e-5,
        1e-4,
        generations=("trn3",),
    ),
    Probe(
        "exponential",
        "exponential",
        (_x(),),
        OUT,
        "nisa.exponential(dst=res, src=ta, max_value=1.0)",
        lambda a: np.exp(a - 1),
        1e-5,
        1e-4,
        generations=("trn3",),
    ),
]


def probe_by_name(name: str) -> Probe:
    for p in PROBES:
        if p.name == name:
            return p
    raise KeyError(
        f"no probe named {name!r} (there are {len(PROBES)}: see `trn simulate-diff --list`)"
    )
