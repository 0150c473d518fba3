"""The knowledge pack's code examples compile with the real RVV toolchain."""

from __future__ import annotations

import re
import subprocess

import pytest
from autocomp_rvv.backend import RvvBackend
from autocomp_rvv.toolchain import Tools

PACK = RvvBackend().knowledge(RvvBackend().load_problem("vadd_f32"))
BLOCKS = [
    (e.name, block)
    for e in PACK.examples
    for block in re.findall(r"```c\n(.*?)```", e.text, re.DOTALL)
    if "riscv_vector.h" in block
]


def test_every_kernel_example_has_code():
    assert len(BLOCKS) >= 6
    assert all(e.triggers for e in PACK.examples)
    assert {e.phase for e in PACK.examples} == {"plan", "code"}


@pytest.mark.parametrize("name, code", BLOCKS, ids=[name for name, _ in BLOCKS])
def test_example_compiles_without_warnings(name, code):
    clang = Tools.find().clang
    result = subprocess.run(
        [
            clang,
            "--target=riscv64-unknown-elf",
            "-march=rv64gcv",
            "-ffreestanding",
            "-fsyntax-only",
            "-Wall",
            "-Werror",
            "-include",
            "stdint.h",
            "-include",
            "stddef.h",
            "-xc",
            "-",
        ],
        input=code,
        text=True,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
