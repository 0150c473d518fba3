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


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names: each of ``import a.b, c``; the module of
    ``from a.b import x``, with its leading dots when relative (``from . import x``: ``.``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return ["." * node.level + (node.module or "")]


def module_path_root(node: ast.AST) -> str | None:
    """The root of a plain ``a.b.c`` path (no calls or subscripts: ``x = torch.zeros(3)``
    makes a tensor, not an alias of torch), or None."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def module_aliases(tree: ast.AST, roots: set[str]) -> set[str]:
    """``roots`` and every name the program binds to one of those modules or a part of it:
    ``import torch as t``, ``from torch import nn``, ``from torch.nn import functional as F``,
    and assignments of a plain path (``T = torch``, ``relu = torch.nn.functional.relu``),
    followed to a fixpoint so chains of aliases count too. What a screen needs to see that
    ``t.add = ...`` patches torch however the program spells it."""
    aliases = set(roots)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in roots:
                    aliases.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if (node.module or "").split(".")[0] in roots:
                aliases.update(alias.asname or alias.name for alias in node.names)
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    while True:
        grown = {
            target.id
            for n in assigns
            if module_path_root(n.value) in aliases
            for target in n.targets
            if isinstance(target, ast.Name)
        } - aliases
        if not grown:
            return aliases
        aliases |= grown
