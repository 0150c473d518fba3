"""What an ``autocomp-core`` command costs the test suite: a fresh interpreter against
``autocomp_core.testing.preloaded_cli`` (a process forked from a server that has imported the
command line's third-party libraries), side by side, command by command.

A forked command's CPU is not counted among its caller's children, so both are measured as the
machine's busy time (``/proc/stat``) over the runs: run this on an otherwise idle machine.
Printed per command: CPU seconds and wall seconds per run both ways, and their ratios.

Usage: python benchmarks/preloaded_cli.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from autocomp_core.testing import preloaded_cli

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "toybackend"
PLAIN = [sys.executable, "-m", "autocomp_core.cli"]
COMMANDS = {
    "backends --json": ["backends", "--json"],
    "problems gemmini": ["problems", "gemmini", "--json"],
    "eval toy baseline": ["eval", "toy", "sum_squares", str(TOY / "problems" / "sum_squares.py")],
    "eval toy (unknown problem)": ["eval", "toy", "nosuch", str(TOY / "problems" / "x.py")],
}


def busy_seconds() -> float:
    """CPU time the whole machine has spent busy since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def measure(prefix: list[str], args: list[str], runs: int, env: dict) -> tuple[float, float]:
    """CPU and wall seconds per run of one command."""
    cpu, wall = busy_seconds(), time.monotonic()
    for _ in range(runs):
        subprocess.run([*prefix, *args], capture_output=True, env=env, timeout=300)
    return (busy_seconds() - cpu) / runs, (time.monotonic() - wall) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(TOY), os.environ.get("PYTHONPATH")) if p),
        "AUTOCOMP_PLUGINS": "toy_plugin",
    }
    os.environ.update(env)  # the fork server starts with the commands' environment
    fast = preloaded_cli()
    subprocess.run([*fast, "--help"], capture_output=True, env=env, check=True)  # server up
    print(
        f"{'command':<28} {'plain cpu':>9} {'preloaded':>9} {'ratio':>6}   {'plain wall':>10} "
        f"{'preloaded':>9} {'ratio':>6}"
    )
    for name, args in COMMANDS.items():
        measure(PLAIN, args, 1, env)  # warm the page cache and bytecode for both
        measure(fast, args, 1, env)
        plain_cpu, plain_wall = measure(PLAIN, args, runs, env)
        fast_cpu, fast_wall = measure(fast, args, runs, env)
        print(
            f"{name:<28} {plain_cpu:9.3f} {fast_cpu:9.3f} {plain_cpu / fast_cpu:5.2f}x   "
            f"{plain_wall:10.3f} {fast_wall:9.3f} {plain_wall / fast_wall:5.2f}x"
        )


if __name__ == "__main__":
    main()
