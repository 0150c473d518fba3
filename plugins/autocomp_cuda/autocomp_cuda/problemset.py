"""The problem suite: KernelBench-format reference files shipped in ``problems/``.

A problem file defines ``Model``, ``get_inputs()`` and ``get_init_inputs()`` at module level.
Ours add an ``AUTOCOMP`` dict (ignored by KernelBench's harness) holding the tiny size
overrides for CPU runs, the FLOP formula, tolerances, whether buffers may change and the
operator family siblings share. Their held-out shapes live in ``problems/held_out.toml``
(``family.py``), which no prompt shows.
This module reads files with ``ast`` only, so it never imports torch.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROBLEM_ROOT = Path(__file__).parent / "problems"
LEVEL_DIRS = {"level1": "L1", "level2": "L2", "level3": "L3", "controls": "ctrl"}
#: Default (atol, rtol) per floating output dtype, for problems that set none: a few units in
#: the last place of each, so half precision is judged by what half precision can hold.
DTYPE_TOLERANCE = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}

#: The budget one forward must fit on the CPU device when a problem brings no tiny sizes
#: (imported ones): its size constants are halved until it does (``runtime/shrink.py``).
#: Each input and the output: 1 M elements (4 MB in float32); each weight: 64 M elements
#: (an architecture's own layer widths are not size constants); FLOPs and operators of one
#: forward. The CPU runs a forward in float32 and float64 and compares outputs in float64
#: several times per trial, so these bound the time the gate and each evaluation take.
TINY_BUDGET = {
    "max_elements": 2**20,
    "max_weight_elements": 64 * 2**20,
    "max_flops": 2e9,
    "max_ops": 10_000,
}
#: Device memory one evaluation holds, in multiples of the problem's inputs, output and
#: weights: the reference worker's float32 and float64 copies, or the candidate worker's
#: input sets (5 trials and 4 held for the checked timed calls), the timing buffers, one
#: freshly drawn set and two models, whichever is more (activations come on top).
HELD_COPIES = 12


def tolerance_for(
    dtype: str, atol: float | None = None, rtol: float | None = None
) -> tuple[float, float]:
    """The problem's tolerances where it sets them, else the defaults of ``dtype`` (a torch name)."""
    default = DTYPE_TOLERANCE.get(dtype, DTYPE_TOLERANCE["float32"])
    return (default[0] if atol is None else atol), (default[1] if rtol is None else rtol)


def describe_tolerance(atol: float | None, rtol: float | None) -> str:
    if atol is not None and rtol is not None:
        return f"atol={atol:g}, rtol={rtol:g}"
    pairs = [
        (name, *tolerance_for(name, atol, rtol)) for name in ("float32", "float16", "bfloat16")
    ]
    return "atol/rtol by output dtype: " + ", ".join(f"{name} {a:g}/{r:g}" for name, a, r in pairs)


@dataclass
class ProblemSpec:
    """A reference file plus the harness facts read from it."""

    id: str
    path: Path
    source: str
    description: str = ""
    tiny: dict[str, Any] = field(default_factory=dict)
    #: more shapes a candidate must be right at (overrides on top of a tier's sizes; checked
    #: untimed, after the timed shape passed): irregular sizes that catch a kernel hard-coded
    #: for the one shape it is timed at
    shapes: list[dict[str, Any]] = field(default_factory=list)
    #: overrides at the ``full`` tier ({}: the file's own sizes; set for a held-out shape)
    full: dict[str, Any] = field(default_factory=dict)
    #: the operator family siblings share (AUTOCOMP ``family``; "" where none is declared)
    operator_family: str = ""
    #: the held-out shape per tier ({"tiny": {...}, "full": {...}}: overrides of the file's
    #: constants, from ``problems/held_out.toml``; see ``family.py``)
    held_out: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: shrink to this fraction of ``TINY_BUDGET`` at any tier (None: only a tiny tier of a
    #: problem without tiny sizes is shrunk, to the whole budget); the held-out shape of an
    #: imported problem
    shrink: float | None = None
    constants: dict[str, Any] = field(default_factory=dict)  # module-level literal constants
    flops: str | None = None
    atol: float | None = None  # None: by the output's dtype (DTYPE_TOLERANCE)
    rtol: float | None = None
    in_place: bool = False
    buffers_mutate: bool = False
    control: str | None = None  # "degenerate" / "stochastic" for negative controls
    tags: list[str] = field(default_factory=list)
    origin: str = "suite"  # "suite", "kernelbench", "file"
    #: trials also on inputs off the problem's own distribution (``input_plan``); None: for
    #: imported problems (whose inputs are KernelBench's [0, 1) draws), not for ours (drawn
    #: signed and scaled per trial already). Constant-initialised weights are re-drawn for
    #: every problem.
    off_distribution_setting: bool | None = None

    @property
    def off_distribution(self) -> bool:
        if self.off_distribution_setting is not None:
            return self.off_distribution_setting
        return self.origin != "suite"

    @property
    def level(self) -> str:
        return self.id.split("/")[0]

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def sizes(self, size: str) -> dict[str, Any]:
        """Module-constant overrides for a size tier (``full`` keeps the file's own, but at a
        held-out shape)."""
        if size == "full":
            return dict(self.full)
        if size == "tiny":
            return dict(self.tiny)
        raise ValueError(f"unknown size tier {size!r} (use 'full' or 'tiny')")

    def shrink_budget(self, size: str) -> dict[str, Any] | None:
        """The budget its sizes are shrunk to at a tier (``runtime/shrink.py``); None: not shrunk."""
        if self.shrink is None:
            return dict(TINY_BUDGET) if size == "tiny" and not self.tiny else None
        budget = dict(TINY_BUDGET)
        for key in ("max_elements", "max_weight_elements", "max_flops"):
            budget[key] = type(budget[key])(budget[key] * self.shrink)
        return budget

    def shrink_fallback(self, size: str) -> dict[str, Any] | None:
        """Where a held-out shape (``shrink`` set) runs when its budget cannot be met: the
        searched problem's budget at the tier ({} at the full tier: the file's own sizes)."""
        if self.shrink is None:
            return None
        return dict(TINY_BUDGET) if size == "tiny" else {}

    def family(self, size: str) -> list[dict[str, Any]]:
        """The module-constant overrides of each extra shape at a size tier."""
        return [{**self.sizes(size), **shape} for shape in self.shapes]

    def flop_count(self, size: str) -> float | None:
        """FLOPs of one forward at a size tier, from the file's formula (None if unknown)."""
        if not self.flops:
            return None
        names = {**self.constants, **self.sizes(size)}
        try:
            return float(eval(self.flops, {"__builtins__": {}}, names))  # our own data file
        except Exception:
            return None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        pass
    if isinstance(node, (ast.Tuple, ast.List)):  # (8192 * 2,)
        items = [_literal(e) for e in node.elts]
        return (
            None
            if any(i is None for i in items)
            else (tuple(items) if isinstance(node, ast.Tuple) else items)
        )
    return const_int(node)


def top_level_assignments(tree: ast.Module) -> list[tuple[str, Any]]:
    """(name, value) for every module-level assignment, in order; value is the literal it
    is set to, or None when it is computed (``bias_shape = (out_channels, 1, 1)``).
    Handles ``a = b = 1``, ``D, H, W = 16, 32, 32`` and ``x: int = 1``."""
    found: list[tuple[str, Any]] = []
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            found.append((node.target.id, _literal(node.value)))
        if not isinstance(node, ast.Assign):
            continue
        value = _literal(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                found.append((target.id, value))
            elif isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(t, ast.Name) for t in target.elts
            ):
                parts = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else []
                for i, t in enumerate(target.elts):
                    found.append(
                        (t.id, _literal(parts[i]) if len(parts) == len(target.elts) else None)
                    )
    return found


def const_int(node: ast.AST) -> int | None:
    """An int written with literals only (``4096``, ``8192 * 2``, ``2**14``), else None."""
    if not all(
        isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
        for n in ast.walk(node)
    ):
        return None
    try:
        value = eval(
            compile(ast.Expression(node), "<size>", "eval"), {"__builtins__": {}}
        )  # literals only
    except Exception:
        return None
    return value if type(value) is int else None


def parse_problem(path: Path, problem_id: str, origin: str = "suite") -> ProblemSpec:
    """Read a reference file without executing it. Raises ValueError naming what is missing."""
    source = path.read_text()
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ValueError(f"{path}: not valid Python: {exc}") from exc
    constants: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    names = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    for target, value in top_level_assignments(tree):
        names.add(target)
        if target == "AUTOCOMP" and isinstance(value, dict):
            meta = value
        elif isinstance(value, (int, float, tuple, list, str)):
            constants[target] = value
        else:
            constants.pop(target, None)  # reassigned to something computed
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise ValueError(
            f"{path}: not a KernelBench-format reference (missing {', '.join(missing)})"
        )
    description = (ast.get_docstring(tree) or "").strip()
    if not description:
        description = f"KernelBench-format problem {path.stem}"
    return ProblemSpec(
        id=problem_id,
        path=path,
        source=source,
        description=description,
        tiny=dict(meta.get("tiny", {})),
        shapes=[dict(shape) for shape in meta.get("shapes", [])],
        operator_family=str(meta.get("family", "")),
        constants=constants,
        flops=meta.get("flops"),
        atol=float(meta["atol"]) if "atol" in meta else None,
        rtol=float(meta["rtol"]) if "rtol" in meta else None,
        in_place=bool(meta.get("in_place", False)),
        buffers_mutate=bool(meta.get("buffers_mutate", False)),
        control=meta.get("control"),
        tags=list(meta.get("tags", [])),
        origin=origin,
        off_distribution_setting=(
            bool(meta["off_distribution"]) if "off_distribution" in meta else None
        ),
    )


def suite(include_controls: bool = False) -> list[ProblemSpec]:
    """Every problem shipped with the plugin, ordered by level then name."""
    specs = []
    for folder, prefix in LEVEL_DIRS.items():
        if folder == "controls" and not include_controls:
            continue
        for path in sorted((PROBLEM_ROOT / folder).glob("*.py")):
            spec = parse_problem(path, f"{prefix}/{path.stem}")
            spec.held_out = held_out_shapes().get(spec.id, {})
            specs.append(spec)
    return specs


@functools.cache
def held_out_shapes() -> dict[str, dict[str, dict[str, Any]]]:
    """Each suite problem's held-out shape per tier (``problems/held_out.toml``)."""
    path = PROBLEM_ROOT / "held_out.toml"
    table = tomllib.loads(path.read_text())
    for problem, tiers in table.items():
        unknown = set(tiers) - {"tiny", "full"}
        if unknown:
            raise ValueError(
                f"{path}: {problem} has unknown tiers {sorted(unknown)} (use tiny, full)"
            )
    return table


def baseline_source(spec: ProblemSpec) -> str:
    """The starting program: the reference with ``Model`` renamed ``ModelNew`` (pure PyTorch),
    references to it included (``super(Model, self).__init__()``, as KernelBench writes it)."""
    tree = ast.parse(spec.source)
    if not any(isinstance(node, ast.ClassDef) and node.name == "Model" for node in tree.body):
        raise ValueError(f"{spec.path}: Model is not a top-level class")
    # Keep the text as written (comments included): rename at each place the name occurs.
    places = [
        (node.lineno, node.col_offset, isinstance(node, ast.ClassDef))
        for node in ast.walk(tree)
        if (isinstance(node, ast.ClassDef) and node.name == "Model" and node in tree.body)
        or (isinstance(node, ast.Name) and node.id == "Model")
    ]
    lines = spec.source.splitlines(keepends=True)
    for lineno, col, is_class in sorted(
        places, reverse=True
    ):  # right to left: earlier columns stay valid
        line = lines[lineno - 1].encode()  # ast columns count UTF-8 bytes
        if is_class:  # the class statement: its name follows "class "
            col = line.index(b"class Model", col) + len(b"class ")
        lines[lineno - 1] = (line[:col] + b"ModelNew" + line[col + len(b"Model") :]).decode()
    return "".join(lines)
