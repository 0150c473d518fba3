"""Turning compiler output into feedback: errors located in the candidate, ptxas resource use."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .runtime import worker_files

ERROR_LINE = re.compile(
    r"^(?P<file>[^\s:]+\.(?:cpp|cu|cuh|h)):(?P<line>\d+)(?::(?P<col>\d+))?:\s*(?P<kind>error|warning|fatal error)?:?\s*(?P<msg>.*)$"
)
NVCC_ERROR = re.compile(
    r"^(?P<file>[^\s(]+\.(?:cu|cuh))\((?P<line>\d+)\):\s*(?P<kind>error|warning)\s*:?\s*(?P<msg>.*)$"
)
PTXAS_FUNC = re.compile(
    r"ptxas info\s*:\s*(?:Compiling entry function|Function properties for) '(?P<name>[^']+)'"
)
PTXAS_USED = re.compile(r"ptxas info\s*:\s*Used (?P<regs>\d+) registers(?:, (?P<rest>.*))?")
#: The most of one generated source file read to quote a line of it.
GENERATED_MAX_BYTES = 16 * 2**20
PTXAS_SPILL = re.compile(r"(?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")


def candidate_line(source_line: str, candidate: str) -> int | None:
    """The candidate's line number holding this generated-source line, if it is unique."""
    needle = source_line.strip()
    if len(needle) < 4:
        return None
    hits = [i + 1 for i, line in enumerate(candidate.splitlines()) if line.strip() == needle]
    if len(hits) == 1:
        return hits[0]
    hits = [i + 1 for i, line in enumerate(candidate.splitlines()) if needle in line]
    return hits[0] if len(hits) == 1 else None


def locate_errors(log: str, candidate: str, build_root: Path | None, limit: int = 12) -> list[str]:
    """Compiler errors rewritten to point at lines of the candidate program where possible."""
    out: list[str] = []
    for raw in log.splitlines():
        match = ERROR_LINE.match(raw.strip()) or NVCC_ERROR.match(raw.strip())
        if not match or (match.group("kind") or "error") == "warning":
            continue
        where = f"{Path(match.group('file')).name}:{match.group('line')}"
        generated = _generated_line(build_root, match.group("file"), int(match.group("line")))
        line = candidate_line(generated, candidate) if generated else None
        prefix = f"candidate line {line}" if line else where
        out.append(
            f"{prefix}: error: {match.group('msg').strip()}"
            + (f"\n    {generated.strip()}" if generated else "")
        )
        if len(out) >= limit:
            break
    return out


def _generated_line(build_root: Path | None, file: str, line: int) -> str | None:
    """Line ``line`` of the generated source the log names, found by its name under
    ``build_root`` (the build's own dir) and read there only as a regular file reached through
    no link: a path in the log, or a link the build left, could name any file the engine may
    read (the fifth meter red team's a13 quoted one into its feedback)."""
    if build_root is None:
        return None
    root = os.path.realpath(build_root)
    for p in build_root.rglob(Path(file).name):
        if os.path.commonpath([root, os.path.realpath(p)]) != root or p.is_symlink():
            continue
        try:
            lines = worker_files.read_text(p, GENERATED_MAX_BYTES).splitlines()
        except OSError:
            continue
        if 0 < line <= len(lines):
            return lines[line - 1]
    return None


def ptxas_summary(log: str) -> list[dict[str, object]]:
    """Registers, spills and shared memory per kernel from ``nvcc -Xptxas -v`` output."""
    kernels: list[dict[str, object]] = []
    current = None
    for raw in log.splitlines():
        if m := PTXAS_FUNC.search(raw):
            current = m.group("name")
        if m := PTXAS_SPILL.search(raw):
            if kernels and kernels[-1]["kernel"] == current:
                kernels[-1].update(
                    spill_stores=int(m.group("stores")), spill_loads=int(m.group("loads"))
                )
            else:
                kernels.append(
                    {
                        "kernel": current,
                        "spill_stores": int(m.group("stores")),
                        "spill_loads": int(m.group("loads")),
                    }
                )
        if m := PTXAS_USED.search(raw):
            entry = {"kernel": current, "registers": int(m.group("regs"))}
            smem = re.search(r"(\d+) bytes smem", m.group("rest") or "")
            entry["smem_bytes"] = int(smem.group(1)) if smem else 0
            if kernels and kernels[-1]["kernel"] == current and "registers" not in kernels[-1]:
                kernels[-1].update(entry)
            else:
                kernels.append(entry)
    return kernels


def demangle(names: list[str]) -> list[str]:
    """C++ names as written (``fused(float const*, int)``), through binutils' c++filt."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return names
    try:
        done = subprocess.run(
            [tool], input="\n".join(names), capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return names
    out = done.stdout.splitlines()
    return out if done.returncode == 0 and len(out) == len(names) else names


def describe_ptxas(kernels: list[dict[str, object]]) -> str:
    lines = []
    names = demangle([str(k["kernel"]) for k in kernels])
    for k, name in zip(kernels, names):
        spill = k.get("spill_stores", 0) or k.get("spill_loads", 0)
        lines.append(
            f"kernel {name}: {k.get('registers', '?')} registers, {k.get('smem_bytes', 0)} B shared memory"
            + (
                f", SPILLS {k.get('spill_stores', 0)} B stores / {k.get('spill_loads', 0)} B loads"
                if spill
                else ""
            )
        )
    return "\n".join(lines)
