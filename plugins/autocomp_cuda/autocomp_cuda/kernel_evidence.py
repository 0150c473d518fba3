"""What the engine can see, from outside the candidate's worker, of the candidate's own kernels.

The worker counts calls into the candidate's extensions and Triton kernels (``runtime/
kernels.py``), but that record lives in the candidate's process, where the candidate can find
it and forge it (a pure-PyTorch program recorded as running its own kernel). The engine
believes "custom code" only with evidence of its own:

- a compiled extension: one of the shared objects the build step made for this candidate
  (the worker's ``prebuilt/`` or ``ext/`` folder) is mapped into the worker's process, read
  from ``/proc/<pid>/maps`` while the worker waits in lock-step;
- a Triton kernel, on a GPU only: the program (as the engine holds it) defines a
  ``@triton.jit`` function (on the CPU device no Triton kernel can run, so a definition proves
  nothing there).

What stays the candidate's word: that a loaded extension or a defined Triton kernel actually
ran in every timed call (the per-call count, ``kernel_calls_per_timed_call``).
"""

from __future__ import annotations

import ast
from pathlib import Path

#: the worker's folders that hold this candidate's builds (see harness/jobs.py, pipeline.py)
BUILD_FOLDERS = ("prebuilt", "ext")


def mapped_files(pid: int) -> set[str] | None:
    """The files mapped into process ``pid`` (None: its maps cannot be read from here)."""
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    found = set()
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            found.add(fields[5].removesuffix(" (deleted)"))
    return found


def extension_loaded(mapped: set[str], work: Path) -> bool:
    """One of the candidate's own built shared objects is among ``mapped``."""
    roots = [str(work / folder) + "/" for folder in BUILD_FOLDERS]
    return any(path.endswith(".so") and path.startswith(tuple(roots)) for path in mapped)


def defines_triton_kernel(code: str) -> bool:
    """The program defines a function decorated ``triton.jit`` (or ``jit`` from triton)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = ast.unparse(target)
                if name in ("triton.jit", "jit", "triton.autotune", "autotune"):
                    return True
    return False
