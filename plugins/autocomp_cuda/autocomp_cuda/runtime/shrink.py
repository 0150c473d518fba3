"""How big one forward of a problem is, measured without running it, and a "tiny" size tier
found for problems that bring none (imported ones) so they run on a CPU.

Sizes come from tensors without data: the inputs ``get_inputs()`` makes and the parameters
and buffers of ``Model(*get_init_inputs())`` on the meta device (a value read from them while
making inputs or the model, ``float(t)``, reads as 1), then one forward on fake CPU tensors
for the output and the FLOPs (matmuls, convolutions, attention: torch's FLOP counter, plus
recurrent layers). A forward that needs real values is run on the CPU instead, once its
inputs and weights are small.

``shrink`` halves a problem's size knobs until one forward fits a ``Budget``
(``problemset.TINY_BUDGET``: elements per input, output and weight, FLOPs and operators).
The knobs are the integer module constants of at least ``MIN_KNOB`` (batch sizes: of at
least 2), and such integers inside constant tuples (``input_shape = (32768,)``); names that
are not sizes (kernel, stride, padding, dilation, groups, heads, pool, number of layers) are
left alone, and no knob goes below ``FLOOR`` (batch sizes: 2, and 1 only where nothing else
can shrink). All knobs are halved together, which keeps the problem's proportions; when that
breaks the problem (a kernel larger than its input, heads that no longer divide a width: the
meta run raises) or changes its structure (the channels per group of a GroupNorm or a
grouped convolution, the width per head of a multi-head attention: halving 64 channels in 8
groups to 8 would make a GroupNorm an InstanceNorm, and a program computing that one would
pass), knobs are tried one at a time and the ones that break it stay. Constants computed
from knobs (``bias_shape = (out_channels, 1, 1)``) follow them, because overrides are
applied to the source (``common.load_module``).
A batch size shrunk to 1 comes with a second shape at 2 (``Shrunk.second``), which the
harness checks too: at 1, a program that computes only the first row is right. That check
costs a second reference and a second run of the candidate, so a batch stops at 2 while any
other knob can still shrink, and goes on to 1 only where nothing else fits the budget.
Everything here is deterministic: the same file gets the same sizes on every machine.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map
from torch.utils.flop_counter import FlopCounterMode

from ..problemset import TINY_BUDGET, top_level_assignments
from . import common

MIN_KNOB = 16
FLOOR = 8
NOT_A_SIZE = re.compile(r"kernel|stride|pad|dilation|group|head|pool|^(num_|n_)?layers?$", re.I)
BATCH = re.compile(r"batch", re.I)


@dataclass(frozen=True)
class Budget:
    """What one forward may take: elements of each input and of the output, of each weight,
    FLOPs and operators (``problemset.TINY_BUDGET`` for the CPU's tiny tier)."""

    max_elements: int = TINY_BUDGET["max_elements"]
    max_weight_elements: int = TINY_BUDGET["max_weight_elements"]
    max_flops: float = TINY_BUDGET["max_flops"]
    max_ops: int = TINY_BUDGET["max_ops"]
    #: A forward that needs real values may run on the CPU (only sizes within the budget do).
    cpu_forward: bool = True

    @classmethod
    def unlimited(cls, max_ops: int) -> Budget:
        """Any size, for measuring only (a GPU's memory check at the file's own sizes): nothing
        runs for real, so a forward that needs real values leaves the output unmeasured."""
        return cls(2**62, 2**62, float("inf"), max_ops, cpu_forward=False)

    def describe(self) -> str:
        return (
            f"{self.max_elements / 2**20:g} M elements per input and output, {self.max_weight_elements / 2**20:g} M "
            f"per weight, {self.max_flops / 1e9:g} GFLOP and {self.max_ops} operators per forward"
        )


@dataclass
class Measure:
    """One forward at some sizes. ``flops`` None: the forward was not measured (its inputs or
    weights are already over the budget, or it has more operators than the budget allows)."""

    data: tuple[str, int]  # the largest input or output: (label with shape, elements)
    weight: tuple[str, int]  # the largest parameter or buffer
    bytes: int  # inputs + output + parameters and buffers
    flops: float | None = None
    ops: int | None = None
    structure: dict[str, int] = field(default_factory=dict)  # see ``structure``

    def fits(self, budget: Budget) -> bool:
        return (
            self.flops is not None
            and self.data[1] <= budget.max_elements
            and self.weight[1] <= budget.max_weight_elements
            and self.flops <= budget.max_flops
        )

    def describe(self) -> str:
        text = f"largest input or output {self.data[0]} ({self.data[1] / 2**20:.3g} M elements)"
        if self.weight[1]:
            text += f", largest weight {self.weight[0]} ({self.weight[1] / 2**20:.3g} M)"
        if self.flops is not None:
            text += f", {self.flops / 1e9:.3g} GFLOP per forward"
        elif self.ops is not None:
            text += f", more than {self.ops} operators per forward"
        return text


@dataclass
class Knob:
    name: str
    index: int | None  # position inside a constant tuple, else None
    value: int

    @property
    def label(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"

    @property
    def floor(self) -> int:
        return 1 if BATCH.search(self.name) else FLOOR


@dataclass
class Shrunk:
    sizes: dict[str, Any] = field(
        default_factory=dict
    )  # module-constant overrides ({}: as written)
    measure: Measure | None = None  # at those sizes
    full: Measure | None = None  # at the file's own sizes
    error: str | None = None  # why no tiny tier was found (one line)
    #: overrides of a second shape to check (untimed): every knob shrunk to 1 set to 2
    second: dict[str, Any] | None = None


class TooManyOps(Exception):
    pass


class _OpCounter(TorchDispatchMode):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.count, self.limit = 0, limit

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        if self.count > self.limit:
            raise TooManyOps(self.limit)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _meta_values_read_as_one() -> Iterator[None]:
    """Reading a value from a meta tensor gives 1 instead of an error (shapes rarely depend
    on it; the real run at the chosen sizes checks everything anyway)."""
    names = ("item", "__float__", "__int__", "__index__", "__bool__")
    originals = {name: getattr(torch.Tensor, name) for name in names}

    def patched(name: str):
        def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if self.is_meta:
                return {"__float__": 1.0, "__bool__": True}.get(
                    name, 1.0 if self.is_floating_point() else 1
                )
            return originals[name](self, *args, **kwargs)

        return read

    for name in names:
        setattr(torch.Tensor, name, patched(name))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def structure(model: torch.nn.Module) -> dict[str, int]:
    """Widths that a grouping fixes, by module: channels per group of each GroupNorm and
    grouped convolution, width per head of each multi-head attention. Shrinking keeps them."""
    found: dict[str, int] = {}
    for name, m in model.named_modules():
        where = name or "model"
        if isinstance(m, torch.nn.GroupNorm):
            found[f"{where}: channels per group"] = m.num_channels // max(m.num_groups, 1)
        elif isinstance(m, torch.nn.modules.conv._ConvNd) and m.groups > 1:
            found[f"{where}: input channels per group"] = m.in_channels // m.groups
            found[f"{where}: output channels per group"] = m.out_channels // m.groups
        elif isinstance(m, torch.nn.MultiheadAttention):
            found[f"{where}: width per head"] = m.head_dim
    return found


class StructureChanged(ValueError):
    """A shrink that would change what kind of operation the problem is (see ``structure``)."""


def knobs(source: str) -> list[Knob]:
    """The size constants of a problem file that shrinking may halve (last assignment wins)."""
    found: dict[str, Knob] = {}
    for name, value in top_level_assignments(ast.parse(source)):
        for key in [k for k in found if found[k].name == name]:
            del found[key]  # reassigned: only the last value counts
        if NOT_A_SIZE.search(name):
            continue
        if type(value) is int and value >= (2 if BATCH.search(name) else MIN_KNOB):
            found[name] = Knob(name, None, value)
        elif isinstance(value, (tuple, list)) and all(type(v) is int for v in value):
            for i, number in enumerate(value):
                if number >= MIN_KNOB:
                    found[f"{name}[{i}]"] = Knob(name, i, number)
    return list(found.values())


def overrides_for(source: str, values: dict[str, int]) -> dict[str, Any]:
    """Module-constant overrides setting each knob (``name`` or ``name[i]``) to its value."""
    sequences = {
        name: value
        for name, value in top_level_assignments(ast.parse(source))
        if isinstance(value, (tuple, list))
    }
    out: dict[str, Any] = {}
    for label, value in values.items():
        if "[" in label:
            name, index = label[:-1].split("[")
            items = list(out.get(name) or sequences[name])
            items[int(index)] = value
            out[name] = type(sequences[name])(items)
        else:
            out[label] = value
    return out


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _sizes(
    label: str, tensors: list[torch.Tensor] | dict[str, torch.Tensor]
) -> list[tuple[str, int, int]]:
    items = (
        tensors.items()
        if isinstance(tensors, dict)
        else [(f"{label} {i}", t) for i, t in enumerate(tensors)]
    )
    return [
        (f"{name} {tuple(t.shape)}", t.numel(), t.numel() * t.element_size()) for name, t in items
    ]


def _largest(sizes: list[tuple[str, int, int]]) -> tuple[str, int]:
    worst = max(sizes, key=lambda s: s[1]) if sizes else ("(none)", 0, 0)
    return worst[0], worst[1]


def _summary(
    data: list[tuple[str, int, int]], weights: list[tuple[str, int, int]], **known: Any
) -> Measure:
    return Measure(
        data=_largest(data),
        weight=_largest(weights),
        bytes=sum(s[2] for s in data + weights),
        **known,
    )


def _is_meta_limit(exc: BaseException) -> bool:
    """An error of shape-only tensors themselves (a value read, an operator with no meta
    kernel), not of the problem's shapes."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(
        m in text
        for m in (
            "meta",
            "fake",
            "data-dependent",
            "datadependent",
            "dynamicoutputshape",
            "item()",
            "not implemented",
            "notimplemented",
            "unsupportedoperator",
        )
    )


def _rnn_flops(input_shape, *rest, out_shape=None, **kwargs) -> int:
    """Fused recurrent layers (LSTM/GRU/RNN, the CPU's oneDNN layer): every weight matrix
    meets one vector per step and batch row."""
    steps = 1
    for n in input_shape[:-1]:
        steps *= n

    def matrices(value: Any) -> list[torch.Size]:
        if isinstance(value, torch.Size):
            return [value] if len(value) == 2 else []
        return [m for v in value for m in matrices(v)] if isinstance(value, (list, tuple)) else []

    return 2 * steps * sum(m[0] * m[1] for m in matrices(rest))


#: torch's FLOP counter has no formula for the fused recurrent operators.
RNN_FLOPS = {
    op: _rnn_flops
    for op in (
        torch.ops.aten.lstm,
        torch.ops.aten.gru,
        torch.ops.aten.rnn_tanh,
        torch.ops.aten.rnn_relu,
        torch.ops.aten.mkldnn_rnn_layer,
    )
}


def _run_counted(fn, max_ops: int, *modes: Any) -> tuple[Any, float, int] | None:
    """``fn()`` under a FLOP and an operator counter; None when it has more than ``max_ops``."""
    counter, ops = FlopCounterMode(display=False, custom_mapping=RNN_FLOPS), _OpCounter(max_ops)
    try:
        with contextlib.ExitStack() as stack:
            for mode in modes:
                stack.enter_context(mode)
            stack.enter_context(torch.no_grad())
            stack.enter_context(counter)
            stack.enter_context(ops)
            out = fn()
    except TooManyOps:
        return None
    return out, float(counter.get_total_flops()), ops.count


#: Fake tensors log every failed shape check as an error; here a failure is an answer.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


def _fake_forward(
    model: torch.nn.Module, inputs: list[Any], max_ops: int
) -> tuple[Any, float, int] | None:
    """The forward on fake CPU tensors made from the meta ones: the CPU's own operators (fused
    recurrent layers, which meta tensors run step by step, slowly), still without data."""
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    cpu = torch.device("cpu")

    def fake(value: Any) -> Any:
        return (
            FakeTensor(mode, value.detach(), cpu)
            if isinstance(value, torch.Tensor) and value.is_meta
            else value
        )

    state = {name: fake(t) for name, t in [*model.named_parameters(), *model.named_buffers()]}
    args = tuple(tree_map(fake, list(inputs)))
    return _run_counted(lambda: torch.func.functional_call(model, state, args), max_ops, mode)


def measure(path: str | Path, overrides: dict[str, Any], budget: Budget = Budget()) -> Measure:
    """One forward at these sizes. Raises what the problem raises when a shape does not work."""
    module = common.load_module(path, "problem_sizes", overrides)
    with torch.device("meta"), _meta_values_read_as_one():
        common.seed_all(0)
        inputs = module.get_inputs()
        model = module.Model(*module.get_init_inputs())
    data, weights = _sizes("input", _tensors(inputs)), _sizes("", model.state_dict())
    shape = structure(model)
    if _largest(data)[1] > budget.max_elements or _largest(weights)[1] > budget.max_weight_elements:
        return _summary(data, weights, structure=shape)  # shrink before running anything
    try:
        ran = _fake_forward(model, inputs, budget.max_ops)
    except (
        Exception
    ):  # fake tensors cannot do everything meta tensors can (plain tensor attributes)
        try:
            ran = _run_counted(lambda: model(*inputs), budget.max_ops)
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
            if not _is_meta_limit(exc):
                raise
            if not budget.cpu_forward:
                return _summary(data, weights, structure=shape)
            ran = _cpu_forward(module, budget.max_ops)
    if ran is None:
        return _summary(data, weights, ops=budget.max_ops, structure=shape)
    out, flops, ops = ran
    return _summary(
        data + _sizes("output", _tensors(out)), weights, flops=flops, ops=ops, structure=shape
    )


def _cpu_forward(module: Any, max_ops: int) -> tuple[Any, float, int] | None:
    """The forward needs real values: run it on the CPU (its inputs and weights are small)."""
    common.seed_all(0)
    inputs = module.get_inputs()
    model = module.Model(*module.get_init_inputs())
    return _run_counted(lambda: model(*inputs), max_ops)


def shrink(path: str | Path, budget: Budget = Budget()) -> Shrunk:
    """Sizes at which one forward fits the budget (see the module doc for how they are found)."""
    source = Path(path).read_text()
    result = Shrunk()
    try:
        result.full = measure(path, {}, budget)
    except Exception as exc:
        result.error = f"the problem does not run at its own sizes: {type(exc).__name__}: {exc}"
        return result
    all_knobs = knobs(source)
    original = {k.label: k.value for k in all_knobs}
    floors = {k.label: k.floor for k in all_knobs}
    batch_at_two = {k for k, floor in floors.items() if floor == 1}  # (see the module doc)
    values, stuck = dict(original), set()
    current = result.full
    while not current.fits(budget):
        movable = [
            k
            for k in values
            if k not in stuck and values[k] // 2 >= max(floors[k], 2 if k in batch_at_two else 1)
        ]
        if not movable and batch_at_two:
            batch_at_two = set()  # nothing else shrinks: a batch of 1, checked at 2 too
            continue
        if not movable:
            shown = ", ".join(f"{k}={v}" for k, v in values.items()) or "no size constants"
            result.error = (
                f"cannot shrink: at the smallest sizes its constants allow ({shown}) the "
                f"{current.describe()}; the budget is {budget.describe()}"
            )
            return result
        # All together first; if that breaks the problem, one at a time, largest first.
        for group in [movable] + [[k] for k in sorted(movable, key=lambda k: (-values[k], k))]:
            trial = {**values, **{k: values[k] // 2 for k in group}}
            try:
                measured = measure(path, overrides_for(source, trial), budget)
                if measured.structure != result.full.structure:  # (set above)
                    raise StructureChanged(measured.structure)
                current = measured
            except Exception:
                if len(group) == 1:
                    stuck.add(group[0])  # the problem needs this one as it is
                continue
            values = trial
            break
    result.sizes = overrides_for(source, {k: v for k, v in values.items() if v != original[k]})
    result.measure = current
    result.second = _second_shape(path, source, values, original, budget)
    return result


def _second_shape(
    path: str | Path,
    source: str,
    values: dict[str, int],
    original: dict[str, int],
    budget: Budget,
) -> dict[str, Any] | None:
    """The chosen sizes with every knob shrunk to 1 set to 2 (None: no knob is at 1, or the
    problem does not run at 2)."""
    ones = [k for k, v in values.items() if v == 1 and original[k] > 1]
    if not ones:
        return None
    second = {**values, **{k: 2 for k in ones}}
    try:
        measure(path, overrides_for(source, second), Budget.unlimited(budget.max_ops))
    except Exception:
        return None
    return overrides_for(source, {k: v for k, v in second.items() if v != original[k]})
