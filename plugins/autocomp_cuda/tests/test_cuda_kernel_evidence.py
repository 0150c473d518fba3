"""The engine's own evidence of a candidate's kernels, read from outside its process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autocomp_cuda import kernel_evidence


def test_the_files_mapped_into_another_process_are_read_from_outside(tmp_path):
    # a real shared object of the interpreter's, loaded by a child that then waits
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import _ctypes, sys; print(_ctypes.__file__, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        loaded = child.stdout.readline().strip()
        mapped = kernel_evidence.mapped_files(child.pid)
    finally:
        child.communicate("")
    assert mapped is not None and str(Path(loaded).resolve()) in mapped
    # the same object, as if it were a build of the candidate's, is found only in its folder
    assert not kernel_evidence.extension_loaded(mapped, tmp_path)
    assert kernel_evidence.extension_loaded({str(tmp_path / "prebuilt" / "k.so")}, tmp_path)


def test_a_process_that_is_gone_has_no_evidence():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert kernel_evidence.mapped_files(child.pid) is None


def test_a_triton_kernel_is_one_the_program_defines():
    kernel = "import triton\n@triton.jit\ndef k(x_ptr):\n    pass\n"
    assert kernel_evidence.defines_triton_kernel(kernel)
    assert kernel_evidence.defines_triton_kernel(kernel.replace("@triton.jit", "@triton.jit()"))
    named_only = "import triton\n# @triton.jit\ndef k(x):\n    return x\nuse = 'triton.jit'\n"
    assert not kernel_evidence.defines_triton_kernel(named_only)
    assert not kernel_evidence.defines_triton_kernel("def broken(:\n")
