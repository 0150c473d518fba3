"""The measured programs of the original system's published Trainium optimization traces, for
``autocomp-core fidelity trn --source CHECKOUT`` (a local checkout of ucb-bar/autocomp).

Each trace file (``examples/trn-*/N_<kernel>_trace.py``) is one Python expression: the best
program of a search as nested ``CodeCandidate(parent=..., code='''...''', score=...)`` calls,
each parent the program it was derived from. ``score`` is the P99 latency in ms the original
system measured on trn1 with its harness at the harness's shapes. The file is parsed, never run:
only string and number literals are read from it.

The last program of a chain is read from the chain's ``N_<kernel>_opt.py`` where there is one:
the same program published as a file of its own (the trace's copy of mamba's best lost a line
break in the publication, which turned its ``if tail > 0:`` into a comment).

Each program is mapped onto our problem at the measured shapes (``<id>@full`` where ours is
checked at a smaller one), adapted only as the original harness did when it ran it: the kernel
``test`` renamed to our entry point, and the harness's imports added for the names it uses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FidelityUnsupported, MeasuredProgram, Problem

#: the generation the published programs were measured on (the fidelity command asks for it)
MEASURED_ON = "trn1"

#: the name the published kernels have (the original harness renamed it when it ran them)
PUBLISHED_ENTRY = "test"

#: The import the original harnesses put above each program, per name the program may use
#: without importing it.
HARNESS_IMPORTS = {
    "nki": "import neuronxcc.nki as nki",
    "nisa": "import neuronxcc.nki.isa as nisa",
    "nl": "import neuronxcc.nki.language as nl",
    "nt": "import neuronxcc.nki.typing as nt",
    "np": "import numpy as np",
    "math": "import math",
    "par_dim": "from neuronxcc.nki.language import par_dim",
}


@dataclass(frozen=True)
class Chain:
    name: str  # as the fidelity report shows it
    path: str  # the trace file inside the checkout
    problem: str  # our problem id, at the measured shapes
    held_out: bool = False  # not used to fit the cost model


#: The five published chains. ``1_gemm_trace.py`` holds the same gemm chain as ``2_gemm_trace.py``
#: (same scores) with three of its programs cut mid-line in the publication (they do not parse),
#: so the gemm chain is read from the latter only. conv1d is held out: the cost model is fitted on
#: the tutorial chains alone.
CHAINS = (
    Chain("trn-tutorial/gemm", "examples/trn-tutorial/2_gemm_trace.py", "tutorial/gemm@full"),
    Chain("trn-tutorial/mamba", "examples/trn-tutorial/3_mamba_trace.py", "tutorial/mamba"),
    Chain(
        "trn-tutorial/attention",
        "examples/trn-tutorial/4_attention_trace.py",
        "tutorial/attention@full",
    ),
    Chain(
        "trn-tutorial/sd_attention",
        "examples/trn-tutorial/5_sd_attention_trace.py",
        "tutorial/sd_attention@full",
    ),
    Chain(
        "trn-advanced/conv1d",
        "examples/trn-advanced/4_conv1d_trace.py",
        "advanced/conv1d@full",
        held_out=True,
    ),
)


def read_trace(text: str, where: str) -> list[tuple[str, float]]:
    """``(code, score)`` of every program of a trace file, the start program first. Reads only
    literals: anything else where a program or score should be is refused."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise FidelityUnsupported(f"{where}: not a trace of programs ({exc.msg})") from None
    programs: list[tuple[str, float]] = []
    node: ast.expr | None = tree.body
    while node is not None:
        if not (isinstance(node, ast.Call) and _called(node) == "CodeCandidate"):
            raise FidelityUnsupported(f"{where}: expected CodeCandidate(...), found {_what(node)}")
        fields = {k.arg: k.value for k in node.keywords if k.arg}
        try:
            code = ast.literal_eval(fields["code"])
            score = ast.literal_eval(fields["score"])
        except (KeyError, ValueError, TypeError, SyntaxError):
            raise FidelityUnsupported(
                f"{where}: a CodeCandidate without a literal code and score"
            ) from None
        if not isinstance(code, str) or not isinstance(score, (int, float)):
            raise FidelityUnsupported(f"{where}: code must be text and score a number")
        programs.append((code, float(score)))
        parent = fields.get("parent")
        node = None if parent is None or _is_none(parent) else parent
    return programs[::-1]


def _called(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ""


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _what(node: ast.expr) -> str:
    return type(node).__name__


def adapt(code: str, entry: str) -> tuple[str, str]:
    """The program as the original harness ran it, under our entry name: ``def test(`` renamed,
    and the harness's import added for each name the program uses without importing it.
    Returns the code and what was changed (``""`` if nothing)."""
    changes = []
    renamed, count = re.subn(
        rf"^(\s*)def {PUBLISHED_ENTRY}\s*\(", rf"\1def {entry}(", code, flags=re.MULTILINE
    )
    if count:
        changes.append(f"renamed {PUBLISHED_ENTRY} -> {entry}")
    imported = _imported_names(code)
    missing = [
        name
        for name in HARNESS_IMPORTS
        if name not in imported and re.search(rf"(?<![\w.]){name}\b", renamed)
    ]
    if missing:
        changes.append("added the harness's imports of " + ", ".join(missing))
        renamed = "\n".join(HARNESS_IMPORTS[name] for name in missing) + "\n" + renamed
    return renamed, "; ".join(changes)


def _imported_names(code: str) -> set[str]:
    """The names the program's own top-level imports bind (by their lines: a program cut
    mid-line in the publication still shows its imports)."""
    names: set[str] = set()
    for line in code.splitlines():
        if not line.startswith(("import ", "from ")):
            continue
        try:
            (statement,) = ast.parse(line).body
        except (SyntaxError, ValueError):
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in statement.names)
    return names


def measured_programs(
    source: Path, problem_for: Callable[[str], tuple[Problem, str]]
) -> list[MeasuredProgram]:
    """Every program of every chain in ``CHAINS`` read from the checkout at ``source``;
    ``problem_for(id)`` gives the Problem to evaluate a chain's programs as and its entry name."""
    found = []
    for chain in CHAINS:
        path = Path(source) / chain.path
        if not path.is_file():
            raise FidelityUnsupported(
                f"{source} is not a checkout of the original autocomp repository: no {chain.path}"
            )
        problem, entry = problem_for(chain.problem)
        programs = read_trace(path.read_text(), chain.path)
        final = path.with_name(path.name.replace("_trace.py", "_opt.py"))
        for step, (code, score_ms) in enumerate(programs):
            from_final = step == len(programs) - 1 and final.is_file()
            adapted, changes = adapt(final.read_text() if from_final else code, entry)
            if from_final:  # the trace's copy of mamba's is cut mid-line in the publication
                changes = "; ".join(filter(None, [f"the program of {final.name}", changes]))
            found.append(
                MeasuredProgram(
                    chain=chain.name,
                    step=step,
                    name="start" if step == 0 else f"step {step}",
                    measured=score_ms * 1000.0,  # the backend's metric is in us
                    problem=problem,
                    code=adapted,
                    held_out=chain.held_out,
                    source=f"{chain.path}#{step}",
                    adapted=changes,
                )
            )
    return found
