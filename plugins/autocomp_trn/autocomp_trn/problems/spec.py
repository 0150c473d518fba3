"""What a problem is: inputs (shape, dtype, distribution), a float64 reference, tolerances,
the work a lower bound is computed from, and its baseline program."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..emulator import dtypes
from ..emulator.hardware import Generation

HERE = Path(__file__).parent
#: the suffix of a problem id naming the problem at its original benchmark's shapes
FULL_SUFFIX = "@full"
#: the suffix of a problem id naming the problem with its legacy baseline (``neuronxcc.nki``, the
#: NKI v1 API the original system's traces used), kept under ``problems/<suite>/legacy/``
LEGACY_SUFFIX = "@legacy"
#: the suffix of a problem id naming the problem at its held-out shape (``ProblemSpec.held_out_inputs``):
#: where the held-out check evaluates a search's best programs
HELD_OUT_SUFFIX = "@heldout"


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    dist: str = "normal"  # normal | uniform (-1, 1) | unit (0, 1) | negative | positive | small | bits (0 or 1)
    #: the drawn values times this (a weight matrix scaled by 1/sqrt(fan-in) keeps a layer's outputs O(1))
    scale: float = 1.0

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        x = self._draw(rng)
        if self.scale != 1.0:
            x = x * np.float32(self.scale)
        return x.astype(dtypes.DTYPES[self.dtype])

    def _draw(self, rng: np.random.Generator) -> np.ndarray:
        n = self.shape
        if self.dist == "normal":
            x = rng.standard_normal(n, dtype=np.float32)
        elif self.dist == "uniform":
            x = rng.uniform(-1, 1, n).astype(np.float32)
        elif self.dist == "unit":
            x = rng.random(n, dtype=np.float32)
        elif self.dist == "negative":
            x = -rng.uniform(0.1, 1.0, n).astype(np.float32)
        elif self.dist == "positive":
            x = rng.uniform(0.5, 2.0, n).astype(np.float32)
        elif self.dist == "small":
            x = rng.uniform(0.0, 0.1, n).astype(np.float32)
        elif self.dist == "bits":
            x = rng.integers(0, 2, n).astype(np.float32)
        else:
            raise ValueError(self.dist)
        return x


@dataclass
class Work:
    """What any correct kernel must at least do, for the speed-of-light bound."""

    hbm_bytes: float = 0.0    # bytes that must cross HBM (inputs read once, outputs written once)
    pe_flops: float = 0.0     # matmul FLOPs (bounded at the bf16 TensorE peak)
    act_elems: float = 0.0    # transcendental elements (ScalarE 1 per lane-cycle; on trn3 also VectorE)
    dve_cycles: float = 0.0   # VectorE lane-cycles that cannot go elsewhere (scans)

    def bound_us(self, gen: Generation) -> float:
        terms = [self.hbm_bytes / gen.hbm_gbs / 1e3,
                 self.pe_flops / (gen.pe_tflops_bf16 * 1e12) * 1e6,
                 # exponentials: ScalarE, plus VectorE's nisa.exponential on NeuronCore-v4
                 self.act_elems / gen.exp_elems_per_ns / 1e3,
                 self.dve_cycles / (128 * gen.dve_ghz * 1e9) * 1e6]
        return max(terms)


@dataclass
class ProblemSpec:
    id: str
    title: str
    description: str
    inputs: list[Input]
    outputs: list[tuple[tuple[int, ...], str]]
    reference: Callable[..., tuple[np.ndarray, ...]]
    atol: float
    rtol: float
    work: Callable[[list[Input]], Work]
    baseline: str  # file name under problems/<suite>/
    full_inputs: list[Input] | None = None  # the original benchmark's shapes, when evaluation uses smaller ones
    full_outputs: list[tuple[tuple[int, ...], str]] | None = None
    kwargs: dict = field(default_factory=dict)
    entry: str = "solution"
    language: str = "nki"  # "pytorch": the baseline is PyTorch source to translate
    published_ms: tuple[float, float] | None = None  # (start, best) P99 latency on trn1 (nki.md 6.3)
    notes: str = ""
    #: input name -> factor: with more than one seed, the last seed's inputs are scaled by it, so
    #: a kernel that is right only on N(0,1)-sized values (a softmax without its max
    #: subtraction overflows exp) fails there; only where the reference stays well defined
    stress: dict[str, float] = field(default_factory=dict)
    #: with more than one seed, edits the last seed's inputs (after ``stress``), given a generator
    #: of that seed: where scaling would cost honest bf16 kernels their precision, a few chosen
    #: values can still make a kernel right only on small values fail (``catalog.saturated_row``)
    last_seed: Callable[[list[np.ndarray], np.random.Generator], list[np.ndarray]] | None = None
    legacy: bool = False  # the baseline is the legacy one (problems/<suite>/legacy/)
    #: the operator family shared by shape siblings (default: the id without any ``@`` suffix)
    family: str = ""
    #: what a program may assume of the shapes, said in the prompt: the held-out shape keeps it
    shape_rule: str = ""
    #: another shape of the family, keeping ``shape_rule``, where the held-out check evaluates a
    #: search's best programs (``<id>@heldout``); None: ``fixed_shape`` says why there is none
    held_out_inputs: list[Input] | None = None
    held_out_outputs: list[tuple[tuple[int, ...], str]] | None = None
    fixed_shape: str = ""

    @property
    def has_legacy(self) -> bool:
        return not self.legacy and (HERE / self.suite / "legacy" / self.baseline).is_file()

    @property
    def suite(self) -> str:
        return self.id.split("/")[0]

    @property
    def baseline_path(self) -> Path:
        return HERE / self.suite / ("legacy" if self.legacy else "") / self.baseline

    def baseline_code(self) -> str:
        return self.baseline_path.read_text()

    @property
    def family_id(self) -> str:
        return self.family or self.id.split("@")[0]

    @property
    def has_held_out(self) -> bool:
        return self.held_out_inputs is not None

    def at_full_shape(self) -> ProblemSpec:
        """This problem checked and timed at the original benchmark's shapes (the id
        ``<id>@full``): where published measurements were taken, to compare the model with them.
        Its held-out shape is the checked one (another shape of the family, and a cheaper one)."""
        if self.full_inputs is None:
            raise KeyError(f"problem {self.id!r} has no other original shape")
        return replace(
            self,
            id=self.id + FULL_SUFFIX,
            description=f"{self.description}. Here at the original shapes, "
            f"{self.describe_shapes(full=True)}",
            inputs=self.full_inputs,
            outputs=self.full_outputs or self.outputs,
            full_inputs=None,
            full_outputs=None,
            held_out_inputs=self.inputs if self.has_held_out else None,
            held_out_outputs=self.outputs if self.has_held_out else None,
        )

    def at_held_out_shape(self) -> ProblemSpec:
        """This problem at its held-out shape (the id ``<id>@heldout``)."""
        if self.held_out_inputs is None:
            raise KeyError(f"problem {self.id!r} has no held-out shape: {self.fixed_shape}")
        return replace(
            self,
            id=self.id + HELD_OUT_SUFFIX,
            description=f"{self.description}. Here at a held-out shape of the family",
            inputs=self.held_out_inputs,
            outputs=self.held_out_outputs or self.outputs,
            full_inputs=None,
            full_outputs=None,
            held_out_inputs=None,
            held_out_outputs=None,
            fixed_shape="it is the held-out shape",
        )

    def with_legacy_baseline(self) -> ProblemSpec:
        """This problem with its legacy baseline (the id ``<id>@legacy``): the ``neuronxcc.nki``
        kernel the original system started from, to compare with its published trn1 numbers."""
        if not self.has_legacy:
            raise KeyError(f"problem {self.id!r} has no legacy baseline")
        return replace(
            self,
            id=self.id + LEGACY_SUFFIX,
            description=f"{self.description}. Legacy baseline: the neuronxcc.nki (NKI v1) kernel",
            legacy=True,
        )

    def shapes(self, full: bool = False) -> tuple[list[Input], list[tuple[tuple[int, ...], str]]]:
        if full and self.full_inputs is not None:
            return self.full_inputs, self.full_outputs or self.outputs
        return self.inputs, self.outputs

    def make_inputs(self, seeds: list[int], full: bool = False) -> list[np.ndarray]:
        """One array per input, each with a leading seed axis."""
        inputs, _ = self.shapes(full)
        per_seed = [[i.draw(np.random.default_rng(s)) for i in inputs] for s in seeds]
        if self.stress and len(seeds) > 1:
            per_seed[-1] = [
                (x.astype(np.float32) * self.stress[i.name]).astype(x.dtype)
                if i.name in self.stress
                else x
                for i, x in zip(inputs, per_seed[-1], strict=True)
            ]
        if self.last_seed is not None and len(seeds) > 1:
            per_seed[-1] = self.last_seed(per_seed[-1], np.random.default_rng([seeds[-1], 1]))
        return [np.stack([draws[k] for draws in per_seed]) for k in range(len(inputs))]

    def lower_bound_us(self, gen: Generation, full: bool = False) -> float:
        inputs, _ = self.shapes(full)
        return self.work(inputs).bound_us(gen) + gen.launch_ns / 1e3

    def features(self) -> dict:
        """The family, the sizes that tell siblings apart (every input's dims, in order) and the
        dtypes, as the playbook and schedule reuse read them from a problem's metadata."""
        return {
            "family": self.family_id,
            "shapes": [d for i in self.inputs for d in i.shape],
            "dtypes": sorted({i.dtype for i in self.inputs} | {d for _, d in self.outputs}),
        }

    def describe_shapes(self, full: bool = False) -> str:
        inputs, outputs = self.shapes(full)
        ins = ", ".join(f"{i.name} {list(i.shape)} {i.dtype}" for i in inputs)
        outs = ", ".join(f"{list(s)} {d}" for s, d in outputs)
        return f"inputs: {ins}; outputs: {outs}"


def io_bytes(inputs: list[Input], outputs) -> float:
    total = sum(math.prod(i.shape) * dtypes.itemsize(i.dtype) for i in inputs)
    return total + sum(math.prod(s) * dtypes.itemsize(d) for s, d in outputs)
