"""A first, static line of refusal: AST rules for constructs no NKI kernel needs and that the
known evaluation hacks rely on. The runtime (restricted builtins, read-only NKI modules, opaque
tensors) and above all the trusted replay back every rule up; this only gives the clearest
message early."""

from __future__ import annotations

import ast

from autocomp_core import Finding, attribute_root

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


def _nki_aliases(tree: ast.AST) -> set[str]:
    names = set(NKI_ROOTS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in NKI_ROOTS:
                    names.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in NKI_ROOTS:
            names.update(a.asname or a.name for a in node.names)
    return names


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


def check(source: str) -> list[Finding]:
    """Every finding; an empty list lets the kernel run. Syntax errors are left to the tracer."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    nki_names = _nki_aliases(tree)
    np_names = _numpy_aliases(tree)
    findings: list[Finding] = []
    allowed = ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            if isinstance(node, ast.ImportFrom) and node.level:
                names = ["." + (node.module or "")]
            for name in names:
                if name.split(".")[0] not in ALLOWED_IMPORTS:
                    findings.append(
                        Finding(
                            "forbidden-import",
                            f"imports {name}: kernels may import only {allowed}",
                            line,
                        )
                    )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FORBIDDEN_CALLS
        ):
            findings.append(
                Finding(
                    "forbidden-call",
                    f"calls {node.func.id}(): {FORBIDDEN_CALLS[node.func.id]}",
                    line,
                )
            )
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr != "__init__":
                findings.append(
                    Finding(
                        "introspection",
                        f"uses .{node.attr}: kernels need no Python internals",
                        line,
                    )
                )
            elif node.attr.startswith("_") and attribute_root(node) in nki_names:
                findings.append(
                    Finding(
                        "private-api",
                        f"uses {ast.unparse(node)}: only the public NKI API exists",
                        line,
                    )
                )
            elif node.attr == "random" and attribute_root(node) in np_names:
                findings.append(
                    Finding(
                        "host-compute",
                        "uses numpy.random: data made on the host never reaches the device",
                        line,
                    )
                )
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for sub in _stored_attributes(target):
                    if attribute_root(sub) in nki_names | np_names:
                        findings.append(
                            Finding(
                                "monkeypatch",
                                f"assigns to {ast.unparse(sub)}: the NKI API and "
                                "NumPy are read-only",
                                line,
                            )
                        )
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            findings.append(
                Finding(
                    "state",
                    f"declares {'global' if isinstance(node, ast.Global) else 'nonlocal'} "
                    f"{', '.join(node.names)}: a kernel is a pure function of its inputs",
                    line,
                )
            )
        elif isinstance(node, ast.Try):
            findings.append(
                Finding(
                    "try",
                    "catches exceptions: NKI kernels cannot handle errors at run time, and "
                    "must not behave differently under this emulator",
                    line,
                )
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and any(w in node.value.lower() for w in ("autocomp", "emulat"))
        ):
            findings.append(
                Finding("emulator-detection", "names the evaluation harness in a string", line)
            )
    for node in tree.body:  # module level: imports, definitions and constants only
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = node.value
            if value is not None and any(
                isinstance(n, ast.Call) and attribute_root(n.func) in np_names
                for n in ast.walk(value)
            ):
                findings.append(
                    Finding(
                        "host-compute",
                        "computes with NumPy at import time: host data never "
                        "reaches the device, kernels compute with NKI instructions",
                        node.lineno,
                    )
                )
        elif isinstance(node, (ast.For, ast.While, ast.With)):
            findings.append(
                Finding(
                    "host-compute",
                    "runs code at import time: put all work in the kernel",
                    node.lineno,
                )
            )
    unique = {(f.rule, f.message, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: f.line)
