"""A first, static line of refusal: AST rules for constructs no NKI kernel needs and that the
known evaluation hacks rely on. The runtime (restricted builtins, read-only NKI modules, opaque
tensors) and above all the trusted replay back every rule up; this only gives the clearest
message early."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from autocomp_core import Finding, attribute_root, imported_modules, module_aliases

from .runtime import ALLOWED_IMPORTS

FORBIDDEN_CALLS = {
    "exec": "dynamic code",
    "eval": "dynamic code",
    "compile": "dynamic code",
    "__import__": "dynamic imports",
    "globals": "introspection",
    "locals": "introspection",
    "vars": "introspection",
    "dir": "introspection",
    "getattr": "reflection",
    "setattr": "monkeypatching",
    "delattr": "monkeypatching",
    "open": "file access (kernels see only their inputs)",
    "breakpoint": "debugger",
    "input": "console input",
}
NKI_ROOTS = {"nki", "neuronxcc"}


def _numpy_aliases(tree: ast.AST) -> set[str]:
    return {
        (a.asname or a.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
        if a.name == "numpy"
    }


def _stored_attributes(target: ast.AST):
    """The attributes an assignment target writes through: ``a.b = ``, ``a.b[i] = `` and the
    elements of a tuple target. A subscript's index is only read (``x[:, nl.ds(0, 8)] = ``
    stores into ``x``), so it is not walked."""
    if isinstance(target, ast.Attribute):
        yield target
        yield from _stored_attributes(target.value)
    elif isinstance(target, ast.Subscript):
        yield from _stored_attributes(target.value)
    elif isinstance(target, ast.Starred):
        yield from _stored_attributes(target.value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _stored_attributes(element)


@dataclass(frozen=True)
class Names:
    """What the kernel calls the NKI modules and NumPy, and the imports it may make."""

    nki: set[str]
    numpy: set[str]
    allowed: str


def check(source: str) -> list[Finding]:
    """Every finding; an empty list lets the kernel run. Syntax errors are left to the tracer."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = Names(
        module_aliases(tree, NKI_ROOTS),
        _numpy_aliases(tree),
        ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"})),
    )
    findings: list[Finding] = []
    for node in ast.walk(tree):
        rule = NODE_RULES.get(type(node))
        if rule is not None:
            findings.extend(rule(node, names, getattr(node, "lineno", 0)))
    findings.extend(_import_time_work(tree, names))
    findings.extend(_api_rules(tree))
    unique = {(f.rule, f.message, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: f.line)


def _imports(node: ast.Import | ast.ImportFrom, names: Names, line: int) -> Iterator[Finding]:
    for name in imported_modules(node):
        if name.split(".")[0] not in ALLOWED_IMPORTS:
            yield Finding(
                "forbidden-import", f"imports {name}: kernels may import only {names.allowed}", line
            )


def _call(node: ast.Call, names: Names, line: int) -> Iterator[Finding]:
    if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
        yield Finding(
            "forbidden-call", f"calls {node.func.id}(): {FORBIDDEN_CALLS[node.func.id]}", line
        )


def _attribute(node: ast.Attribute, names: Names, line: int) -> Iterator[Finding]:
    if node.attr.startswith("__") and node.attr.endswith("__") and node.attr != "__init__":
        yield Finding("introspection", f"uses .{node.attr}: kernels need no Python internals", line)
    elif node.attr.startswith("_") and attribute_root(node) in names.nki:
        yield Finding(
            "private-api", f"uses {ast.unparse(node)}: only the public NKI API exists", line
        )
    elif node.attr == "random" and attribute_root(node) in names.numpy:
        yield Finding(
            "host-compute",
            "uses numpy.random: data made on the host never reaches the device",
            line,
        )


def _store(node: ast.stmt, names: Names, line: int) -> Iterator[Finding]:
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    for target in targets:
        for sub in _stored_attributes(target):
            if attribute_root(sub) in names.nki | names.numpy:
                yield Finding(
                    "monkeypatch",
                    f"assigns to {ast.unparse(sub)}: the NKI API and NumPy are read-only",
                    line,
                )


def _state(node: ast.Global | ast.Nonlocal, names: Names, line: int) -> Iterator[Finding]:
    yield Finding(
        "state",
        f"declares {'global' if isinstance(node, ast.Global) else 'nonlocal'} "
        f"{', '.join(node.names)}: a kernel is a pure function of its inputs",
        line,
    )


def _try(node: ast.Try, names: Names, line: int) -> Iterator[Finding]:
    yield Finding(
        "try",
        "catches exceptions: NKI kernels cannot handle errors at run time, and "
        "must not behave differently under this emulator",
        line,
    )


def _string(node: ast.Constant, names: Names, line: int) -> Iterator[Finding]:
    if isinstance(node.value, str) and any(w in node.value.lower() for w in ("autocomp", "emulat")):
        yield Finding("emulator-detection", "names the evaluation harness in a string", line)


#: the rule each kind of syntax node is held to
NODE_RULES: dict[type, Callable[..., Iterator[Finding]]] = {
    ast.Import: _imports,
    ast.ImportFrom: _imports,
    ast.Call: _call,
    ast.Attribute: _attribute,
    ast.Assign: _store,
    ast.AugAssign: _store,
    ast.AnnAssign: _store,
    ast.Delete: _store,
    ast.Global: _state,
    ast.Nonlocal: _state,
    ast.Try: _try,
    ast.Constant: _string,
}


#: NumPy functions that make one number from numbers (``EPS = np.float32(1e-6)``,
#: ``SCALE = 1 / np.sqrt(128)``): constants, not host data, at module level
SCALAR_FUNCTIONS = {
    *(f"float{b}" for b in (16, 32, 64)),
    *(f"int{b}" for b in (8, 16, 32, 64)),
    *(f"uint{b}" for b in (8, 16, 32, 64)),
    *("sqrt", "exp", "log", "log2", "log10", "tanh", "sin", "cos", "abs", "floor", "ceil"),
}


def _is_number(node: ast.AST, names: Names) -> bool:
    """A number written in the source, or one of NumPy's scalar functions of numbers."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand, names)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left, names) and _is_number(node.right, names)
    if isinstance(node, ast.Attribute):  # np.pi, np.e
        return isinstance(node.value, ast.Name) and node.value.id in names.numpy
    return _is_scalar_call(node, names)


def _is_scalar_call(node: ast.AST, names: Names) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names.numpy
        and node.func.attr in SCALAR_FUNCTIONS
        and not node.keywords
        and len(node.args) == 1
        and _is_number(node.args[0], names)
    )


def _import_time_work(tree: ast.Module, names: Names) -> Iterator[Finding]:
    """Module level: imports, definitions and constants only (a NumPy scalar of numbers is a
    constant; an array is host data)."""
    for node in tree.body:
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = node.value
            if value is not None and any(
                isinstance(n, ast.Call)
                and attribute_root(n.func) in names.numpy
                and not _is_scalar_call(n, names)
                for n in ast.walk(value)
            ):
                yield Finding(
                    "host-compute",
                    "computes with NumPy at import time: host data never "
                    "reaches the device, kernels compute with NKI instructions",
                    node.lineno,
                )
        elif isinstance(node, (ast.For, ast.While, ast.With)):
            yield Finding(
                "host-compute", "runs code at import time: put all work in the kernel", node.lineno
            )


def _api_rules(tree: ast.Module) -> Iterator[Finding]:
    """The current API's rules a reader can see in the source: one API per kernel, and no
    ``is`` comparisons (NKI 0.3) other than with None, True or False. The tracing process
    refuses a kernel mixing the APIs again, at its imports."""
    roots = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in imported_modules(node)
    } & NKI_ROOTS
    if roots == NKI_ROOTS:
        yield Finding(
            "mixed-api",
            "imports both nki (the current API) and neuronxcc.nki (the legacy API): use only "
            "`import nki`",
            0,
        )
    if "nki" not in roots:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops
        ):
            operands = [node.left, *node.comparators]
            if not any(
                isinstance(x, ast.Constant) and any(x.value is c for c in (None, True, False))
                for x in operands
            ):
                yield Finding(
                    "identity-comparison",
                    "compares with `is`: NKI kernels may use `is` only with None, True or False "
                    "(NKI 0.3); compare values with ==",
                    node.lineno,
                )
