"""Static screens: what a backend refuses in a candidate program before running it.

A screen walks the program's syntax tree for constructs no honest kernel needs and that
known evaluation hacks rely on (monkeypatching, introspection, reaching for the
reference) and reports each as a ``Finding``; the backend returns a ``REJECTED`` result
with the findings as feedback. A screen is a first line only: the sandbox and the
backend's runtime checks must hold without it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass
class Finding:
    """One construct a screen refuses: the rule broken, why, and the program's line."""

    rule: str
    message: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} [{self.rule}]"


def attribute_root(node: ast.AST) -> str | None:
    """The name an attribute, subscript or call chain starts from (``np`` for
    ``np.random.rand(3)[0].sum``), or None when it starts from anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
