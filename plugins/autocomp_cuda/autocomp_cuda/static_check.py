"""AST rules a candidate must pass before it runs.

Each rule names a construct a genuine kernel never needs and that the known harness hacks
rely on (threads, frame introspection, monkeypatching, tensor subclasses, reaching for the
reference). Working on the syntax tree, not on regexes, a ``try:`` around a compile or a
``pass`` in an empty ``__init__`` is not flagged; aliasing (``T = torch``) and ``setattr``
are. The runtime checks in the worker back every rule up, so these are a first line only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from autocomp_core import Finding, attribute_root, imported_modules, module_aliases

FORBIDDEN_MODULES = {
    "threading": "background threads (work finishing after forward returns)",
    "_thread": "background threads",
    "multiprocessing": "helper processes",
    "concurrent": "thread or process pools",
    "subprocess": "helper processes",
    "asyncio": "deferred work",
    "gc": "heap introspection (finding the reference output)",
    "inspect": "frame introspection",
    "ctypes": "raw memory access outside the extension",
    "socket": "network access",
    "signal": "signal handlers",
    "importlib": "dynamic imports",
    "builtins": "patching builtins",
    "unittest": "mocking harness functions",
    "faulthandler": "disarming the harness's watchdog",
}
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "globals", "setattr", "delattr", "vars"}
FORBIDDEN_ATTRS = {
    "_getframe": "frame introspection",
    "f_back": "frame introspection",
    "f_locals": "frame introspection",
    "get_objects": "heap introspection",
    "get_referrers": "heap introspection",
    "_make_subclass": "lazy tensor subclass",
    "__torch_function__": "tensor subclass hooks",
    "__torch_dispatch__": "tensor subclass hooks",
    "modules": None,  # only sys.modules, checked below
    "set_float32_matmul_precision": "global precision switch (TF32)",
    "allow_tf32": "global TF32 switch",
    "allow_fp16_reduced_precision_reduction": "global precision switch",
    "allow_bf16_reduced_precision_reduction": "global precision switch",
    "use_deterministic_algorithms": "global determinism switch",
    "set_default_dtype": "global dtype switch",
    "elapsed_time": "timer access",
}
TORCH_ROOTS = {"torch", "time", "math", "F", "nn", "triton", "tl"}


@dataclass(frozen=True)
class _Program:
    """What the rules need to know of the whole program besides the node at hand."""

    reference_module: str
    aliases: set[str]  # names bound to torch or a part of it
    defines_model: bool  # a class Model of its own (a baseline as shipped)


def _imports(node: ast.Import | ast.ImportFrom, line: int, p: _Program) -> Iterator[Finding]:
    for name in imported_modules(node):
        top = name.lstrip(".").split(".")[0]
        if top in FORBIDDEN_MODULES:
            yield Finding("forbidden-import", f"imports {name}: {FORBIDDEN_MODULES[top]}", line)
        if top == p.reference_module:
            yield Finding("reference", "imports the reference problem", line)
    if isinstance(node, ast.ImportFrom) and node.module == "sys":
        for a in node.names:
            if a.name in ("_getframe", "modules"):
                yield Finding("introspection", f"imports sys.{a.name}", line)


def _calls(node: ast.Call, line: int, p: _Program) -> Iterator[Finding]:
    if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
        yield Finding("dynamic-code", f"calls {node.func.id}(): not needed by a kernel", line)


def _attributes(node: ast.Attribute, line: int, p: _Program) -> Iterator[Finding]:
    if node.attr == "modules":
        if attribute_root(node) == "sys":
            yield Finding("introspection", "reads sys.modules", line)
    elif FORBIDDEN_ATTRS.get(node.attr):
        why = FORBIDDEN_ATTRS[node.attr]
        yield Finding("forbidden-attribute", f"uses .{node.attr}: {why}", line)


def _assignments(
    node: ast.Assign | ast.AugAssign | ast.AnnAssign, line: int, p: _Program
) -> Iterator[Finding]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Attribute) and attribute_root(sub) in p.aliases:
                yield Finding("monkeypatch", f"assigns to {ast.unparse(sub)}", line)


def _classes(node: ast.ClassDef, line: int, p: _Program) -> Iterator[Finding]:
    for base in node.bases:
        text = ast.unparse(base)
        if text.endswith("Tensor") or text.endswith("_TensorBase"):
            yield Finding("tensor-subclass", f"class {node.name} subclasses {text}", line)
        if text == "Model" and not p.defines_model:
            yield Finding("reference", f"class {node.name} subclasses the reference Model", line)


def _names(node: ast.Name, line: int, p: _Program) -> Iterator[Finding]:
    if node.id == "Model" and isinstance(node.ctx, ast.Load) and not p.defines_model:
        yield Finding("reference", "uses the reference Model", line)


def _strings(node: ast.Constant, line: int, p: _Program) -> Iterator[Finding]:
    if isinstance(node.value, str) and p.reference_module in node.value:
        yield Finding("reference", "names the reference module", line)


#: The rules, by the kind of node each reads (the kinds do not overlap).
RULES: list[tuple[type | tuple[type, ...], Callable[..., Iterator[Finding]]]] = [
    ((ast.Import, ast.ImportFrom), _imports),
    (ast.Call, _calls),
    (ast.Attribute, _attributes),
    ((ast.Assign, ast.AugAssign, ast.AnnAssign), _assignments),
    (ast.ClassDef, _classes),
    (ast.Name, _names),
    (ast.Constant, _strings),
]


def check(source: str, reference_module: str = "reference_problem") -> list[Finding]:
    """All findings; an empty list means the candidate may run."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the build step reports syntax errors with their line
    program = _Program(
        reference_module,
        module_aliases(tree, TORCH_ROOTS),
        any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body),
    )
    findings: list[Finding] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        for kinds, rule in RULES:
            if isinstance(node, kinds):
                findings.extend(rule(node, line, program))
    unique = {(f.rule, f.message, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: f.line)
