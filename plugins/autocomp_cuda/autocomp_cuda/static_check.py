"""AST rules a candidate must pass before it runs.

Each rule names a construct a genuine kernel never needs and that the known harness hacks
rely on (threads, frame introspection, monkeypatching, tensor subclasses, reaching for the
reference). Working on the syntax tree, not on regexes, a ``try:`` around a compile or a
``pass`` in an empty ``__init__`` is not flagged; aliasing (``T = torch``) and ``setattr``
are. The runtime checks in the worker back every rule up, so these are a first line only.
"""

from __future__ import annotations

import ast

from autocomp_core import Finding, attribute_root

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


def _module_path_root(node: ast.AST) -> str | None:
    """The root of a plain ``a.b.c`` path (no calls or subscripts: ``x = torch.zeros(3)``
    makes a tensor, not an alias of torch)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _torch_aliases(tree: ast.AST) -> set[str]:
    """Names bound to torch or any part of it (``import torch as t``, ``T = torch``,
    ``nn = torch.nn``), followed to a fixpoint so chains of aliases count too."""
    aliases = set(TORCH_ROOTS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in TORCH_ROOTS:
                    aliases.add((a.asname or a.name).split(".")[0])
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    while True:
        grown = {
            t.id
            for n in assigns
            if _module_path_root(n.value) in aliases
            for t in n.targets
            if isinstance(t, ast.Name)
        } - aliases
        if not grown:
            return aliases
        aliases |= grown


def check(source: str, reference_module: str = "reference_problem") -> list[Finding]:
    """All findings; an empty list means the candidate may run."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the build step reports syntax errors with their line
    findings: list[Finding] = []
    aliases = _torch_aliases(tree)
    defines_model = any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                if top in FORBIDDEN_MODULES:
                    findings.append(
                        Finding(
                            "forbidden-import", f"imports {name}: {FORBIDDEN_MODULES[top]}", line
                        )
                    )
                if top == reference_module:
                    findings.append(Finding("reference", "imports the reference problem", line))
            if isinstance(node, ast.ImportFrom) and node.module == "sys":
                for a in node.names:
                    if a.name in ("_getframe", "modules"):
                        findings.append(Finding("introspection", f"imports sys.{a.name}", line))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FORBIDDEN_CALLS
        ):
            findings.append(
                Finding("dynamic-code", f"calls {node.func.id}(): not needed by a kernel", line)
            )
        elif isinstance(node, ast.Attribute):
            if node.attr == "modules":
                if attribute_root(node) == "sys":
                    findings.append(Finding("introspection", "reads sys.modules", line))
            elif FORBIDDEN_ATTRS.get(node.attr):
                findings.append(
                    Finding(
                        "forbidden-attribute",
                        f"uses .{node.attr}: {FORBIDDEN_ATTRS[node.attr]}",
                        line,
                    )
                )
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and attribute_root(sub) in aliases:
                        findings.append(
                            Finding("monkeypatch", f"assigns to {ast.unparse(sub)}", line)
                        )
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = ast.unparse(base)
                if text.endswith("Tensor") or text.endswith("_TensorBase"):
                    findings.append(
                        Finding("tensor-subclass", f"class {node.name} subclasses {text}", line)
                    )
                if text == "Model" and not defines_model:
                    findings.append(
                        Finding(
                            "reference", f"class {node.name} subclasses the reference Model", line
                        )
                    )
        elif (
            isinstance(node, ast.Name)
            and node.id == "Model"
            and isinstance(node.ctx, ast.Load)
            and not defines_model
        ):
            findings.append(Finding("reference", "uses the reference Model", line))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and reference_module in node.value
        ):
            findings.append(Finding("reference", "names the reference module", line))
    unique = {(f.rule, f.message, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: f.line)
