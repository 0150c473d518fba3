"""What the engine can see, from outside the candidate's worker, of the candidate's own kernels.

The worker counts calls into the candidate's extensions and Triton kernels (``runtime/
kernels.py``), but that record lives in the candidate's process, where the candidate can find
it and forge it (a pure-PyTorch program recorded as running its own kernel). The engine
believes "custom code" only with evidence of its own:

- (the CPU device) its own code ran: the kernel's samples of the worker's threads in its
  timed calls fell in a mapping of a shared object of its builds (the worker's ``prebuilt/``
  or ``ext/`` folder; ``code_samples``); where the calls are too short for the samples to
  tell, or no worker can be sampled on this machine, the mapped build alone is the evidence
  (a note says so);
- (a GPU) a compiled extension: a shared object of its builds is mapped into the worker's
  process, read from ``/proc/<pid>/maps`` while the worker waits in lock-step; or a Triton
  kernel: the program (as the engine holds it) defines a ``@triton.jit`` function (on the CPU
  device no Triton kernel can run, so a definition proves nothing there).

What stays the candidate's word: that its own code ran in every timed call (the per-call
count, ``kernel_calls_per_timed_call``), and what that code is (a build may be any library).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from . import code_samples

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


def build_roots(work: Path) -> tuple[str, ...]:
    """The worker's folders that hold this candidate's builds, as prefixes of mapped paths."""
    return tuple(str(work / folder) + "/" for folder in BUILD_FOLDERS)


def extension_loaded(mapped: set[str], work: Path) -> bool:
    """One of the candidate's own built shared objects is among ``mapped``."""
    roots = build_roots(work)
    return any(path.endswith(".so") and path.startswith(roots) for path in mapped)


def placed_builds(work: Path) -> frozenset[tuple[int, int]]:
    """(st_dev, st_ino) of each build the engine placed in the worker's ``prebuilt/`` folder
    (regular files only), read before the candidate runs."""
    found = set()
    try:
        with os.scandir(work / "prebuilt") as entries:
            for entry in entries:
                if entry.name.endswith(".so") and entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found.add((info.st_dev, info.st_ino))
    except OSError:
        pass
    return frozenset(found)


def own_code_ran(samples: dict[str, code_samples.Samples]) -> tuple[bool | None, str]:
    """(The CPU device) Whether the kernel's samples of the candidate's worker in its timed
    calls (``samples["candidate"]``) fell in code of its own builds: True; False and why;
    None and why where they cannot tell (then a build mapped into its process is the only
    evidence)."""
    mine = samples.get("candidate")
    if mine is None:
        return None, ""
    if mine.error:
        machine = code_samples.available()
        if not machine:  # (this machine can: the candidate's worker could not be watched)
            return False, f"its worker could not be sampled from outside ({mine.error})"
        return None, f"no process can be sampled from outside on this machine ({machine})"
    if mine.own_code:
        return True, ""
    if mine.lost:
        return None, f"some of the kernel's samples of its timed calls were lost ({mine.lost}+)"
    if mine.taken >= code_samples.CONCLUSIVE:
        return False, (
            f"none of the {mine.taken} samples the kernel took of its worker in its timed "
            "calls fell in code of its own builds (its own code's share of their CPU time is "
            f"likely under {300 / mine.taken:.1f}%)"
        )
    return None, (
        f"its timed calls were too short for the kernel's samples to show its own code "
        f"({mine.taken} samples)"
    )


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
