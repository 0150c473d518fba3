"""The differential check: the emulator against the Neuron SDK's CPU simulator (``nki.simulate``).

Each single-instruction probe (``probes.py``) and each current-API tutorial kernel runs through
the emulator (trace, then the trusted replay) and through ``nki.simulate`` in a child process
(``runtime/simulate_main.py``, which imports the real ``nki``; the emulator's stand-in modules
never enter that process) on the same inputs; the outputs are compared element by element with
the kernel's tolerance. Where the SDK is not installed nothing is compared: the command says so
and fails (``autocomp-core trn simulate-diff``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .emulator.hardware import GENERATIONS
from .neuron import api_version, importable
from .problems.spec import ProblemSpec
from .runtime.simulate_main import TAG as SIM_TAG

#: exit codes of the command
AGREE, DIFFER, NO_SDK = 0, 1, 2
NO_SDK_MESSAGE = (
    "nki.simulate is not available: the Neuron SDK's `nki` package (NKI >= 0.3, Neuron >= 2.29) "
    "is not installed in this Python, so nothing was compared"
)


def sdk_missing() -> str | None:
    """Why the simulator cannot run here (None where ``nki`` is importable; the child checks
    ``nki.simulate`` itself)."""
    return None if importable("nki") else NO_SDK_MESSAGE


@dataclass
class Job:
    """One kernel to run on both sides."""

    name: str  # probe/<name> or the problem id
    spec: ProblemSpec
    code: str


@dataclass
class Row:
    name: str
    status: str  # agree | differ | failed | skipped
    shape: list[int]
    dtype: str
    max_abs: float | None = None  # max |emulator - simulator|
    max_rel: float | None = None  # max |emulator - simulator| / |simulator|
    bad: int = 0  # elements outside atol + rtol x |simulator|
    note: str = ""

    def line(self) -> str:
        nums = (
            f"max|emu-sim| {self.max_abs:<10.3g} max rel {self.max_rel:<10.3g}"
            if self.max_abs is not None
            else " " * 41
        )
        what = f"{self.status}" + (f" ({self.bad} elements)" if self.bad else "")
        note = f"  {self.note}" if self.note else ""
        return f"{self.name:<34} {self.shape!s:<16} {self.dtype:<9} {nums} {what}{note}"


class Refused(Exception):
    """The emulator would not run the kernel (its status and message)."""


def emulated(spec: ProblemSpec, code: str, seeds: list[int], generation: str) -> list[np.ndarray]:
    """The kernel's outputs in the emulator (each with a leading seed axis): the tracing step
    and the trusted replay, in this process (for shipped kernels only: probes and baselines)."""
    from .emulator import modules
    from .emulator.replay import Replayer, TraceRefused
    from .emulator.tracer import MAX_EVENTS
    from .runtime.trace_main import trace_source

    gen = GENERATIONS[generation]
    ins, outs = spec.shapes()
    with modules.installed(generation, gen.sbuf_bytes_per_partition):
        status, trace = trace_source(
            code,
            spec.entry,
            [[i.name, list(i.shape), i.dtype] for i in ins],
            spec.kwargs,
            generation,
            gen.sbuf_bytes_per_partition,
            MAX_EVENTS,
        )
    if trace is None:
        code = f" ({status['code']})" if status["code"] else ""
        raise Refused(f"{status['status']}{code}: {status['message']}")
    try:
        result = Replayer(
            json.loads(trace),
            gen,
            [(i.shape, i.dtype) for i in ins],
            spec.make_inputs(seeds),
            outs,
            len(seeds),
        ).run()
    except TraceRefused as exc:
        raise Refused(f"compile_error ({exc.code}): {exc.message}") from exc
    return [np.asarray(o) for o in result.outputs]


def difference(
    name: str, emu: np.ndarray, sim: np.ndarray, atol: float, rtol: float, dtype: str
) -> Row:
    """Element-wise comparison of the two sides' outputs (leading axis: seed). NaN on both
    sides at the same place agrees (both fill memory nothing wrote with NaN)."""
    shape = list(sim.shape[1:])
    if emu.shape != sim.shape:
        return Row(name, "differ", shape, dtype, note=f"emulator shape {list(emu.shape[1:])}")
    e = emu.astype(np.float64)
    s = sim.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(s)
    diff = np.where(both_nan, 0.0, np.abs(e - s))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN on one side only
    rel = diff / np.maximum(np.abs(np.nan_to_num(s)), np.finfo(np.float32).tiny)
    bad = int((diff > atol + rtol * np.abs(np.nan_to_num(s))).sum())
    return Row(
        name,
        "differ" if bad else "agree",
        shape,
        dtype,
        float(diff.max()) if diff.size else 0.0,
        float(rel.max()) if rel.size else 0.0,
        bad,
    )


def simulate(jobs: list[Job], seeds: list[int], generation: str, work: Path, timeout_s: float):
    """Run the jobs through ``nki.simulate`` in one child process; (job name -> output arrays or
    an error message), or raise ``RuntimeError`` with the child's one-line reason (no SDK)."""
    request = {"jobs": []}
    for k, job in enumerate(jobs):
        folder = work / f"job{k}"
        folder.mkdir()
        (folder / "kernel.py").write_text(job.code)
        ins, _ = job.spec.shapes()
        arrays = job.spec.make_inputs(seeds)
        np.savez(folder / "inputs.npz", *[a.astype(np.float32) for a in arrays])
        request["jobs"].append(
            {
                "name": job.name,
                "folder": str(folder),
                "entry": job.spec.entry,
                "dtypes": [i.dtype for i in ins],
                "kwargs": job.spec.kwargs,
            }
        )
    (work / "request.json").write_text(json.dumps(request))
    # the emulator stores bf16/fp8 rounded, as the simulator's precise mode (its default since
    # NKI 0.4) does: a user's NKI_PRECISE_FP=0 would make every low-precision probe differ
    env = {**os.environ, "NEURON_PLATFORM_TARGET_OVERRIDE": generation, "NKI_PRECISE_FP": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "autocomp_trn.runtime.simulate_main", str(work / "request.json")],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        cwd=work,
    )
    results = {}
    for line in run.stdout.splitlines():
        if line.startswith(SIM_TAG):
            out = json.loads(line[len(SIM_TAG) :])
            if out["status"] == "no_sdk":
                raise RuntimeError(out["message"])
            results[out["name"]] = out
    arrays: dict[str, list[np.ndarray] | str] = {}
    for k, job in enumerate(jobs):
        out = results.get(job.name)
        if out is None:
            tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
            arrays[job.name] = f"the simulator process ended (exit {run.returncode}): {tail[0]}"
        elif out["status"] != "ok":  # the last line of the simulator's traceback
            arrays[job.name] = (out["message"].strip().splitlines() or ["failed"])[-1]
        else:
            with np.load(work / f"job{k}" / "outputs.npz") as z:
                arrays[job.name] = [z[f"arr_{i}"] for i in range(len(z.files))]
    return arrays


def problem_jobs(patterns: tuple[str, ...]) -> tuple[list[Job], list[Row]]:
    """The problems matching ``patterns`` whose baseline is in the current API; a legacy one is a
    skipped row (``nki.simulate`` runs only the current API)."""
    import fnmatch

    from .problems.catalog import all_specs

    jobs, skipped = [], []
    for spec in all_specs():
        if spec.language != "nki" or not any(fnmatch.fnmatchcase(spec.id, p) for p in patterns):
            continue
        code = spec.baseline_code()
        if api_version(code) != "v2":
            shape, dtype = spec.outputs[0]
            skipped.append(
                Row(spec.id, "skipped", list(shape), dtype, note="legacy neuronxcc.nki baseline")
            )
            continue
        jobs.append(Job(spec.id, spec, code))
    return jobs, skipped


def references(spec: ProblemSpec, seeds: list[int]) -> list[np.ndarray]:
    """The float64 reference outputs on the inputs both sides got (leading axis: seed)."""
    inputs = spec.make_inputs(seeds)
    per_seed = [
        spec.reference(*[x[s].astype(np.float64) for x in inputs], **spec.kwargs)
        for s in range(len(seeds))
    ]
    return [np.stack([r[k] for r in per_seed]) for k in range(len(per_seed[0]))]


def simulator_against_reference(sim: np.ndarray, ref: np.ndarray, spec: ProblemSpec) -> str:
    """Which side a difference is on: is the simulator's output itself within the tolerance?"""
    from .check import compare

    verdict = compare([sim], [ref], spec.atol, spec.rtol)
    if verdict.ok:
        return f"simulator within tolerance of the reference (worst {verdict.worst_ratio:.2g})"
    return "simulator NOT within tolerance of the reference: " + verdict.message.split(";")[0]


def run_check(
    jobs: list[Job], seeds: list[int], generation: str, work: Path, timeout_s: float = 1800
) -> list[Row]:
    """Both sides for every job; one row per output."""
    sim = simulate(jobs, seeds, generation, work, timeout_s)
    rows = []
    for job in jobs:
        _, outs = job.spec.shapes()
        first_shape, first_dtype = list(outs[0][0]), outs[0][1]
        try:
            emu = emulated(job.spec, job.code, seeds, generation)
        except Refused as exc:
            rows.append(Row(job.name, "failed", first_shape, first_dtype, note=f"emulator {exc}"))
            continue
        got = sim[job.name]
        if isinstance(got, str):
            rows.append(Row(job.name, "failed", first_shape, first_dtype, note=f"simulator {got}"))
            continue
        refs = references(job.spec, seeds)
        for k, ((_, dtype), e, s) in enumerate(zip(outs, emu, got, strict=False)):
            name = job.name if len(outs) == 1 else f"{job.name}[{k}]"
            row = difference(name, e, s, job.spec.atol, job.spec.rtol, dtype)
            against = simulator_against_reference(s, refs[k], job.spec)
            row.note = f"{row.note}; {against}" if row.note else against
            rows.append(row)
        if len(got) != len(outs):
            rows.append(
                Row(
                    job.name,
                    "differ",
                    first_shape,
                    first_dtype,
                    note=f"the simulator returned {len(got)} outputs, the emulator {len(outs)}",
                )
            )
    return rows


def report(rows: list[Row], as_json: bool = False) -> tuple[str, int]:
    """The table (or JSON) and the exit code: 0 when every compared output agrees."""
    counts = {s: sum(r.status == s for r in rows) for s in ("agree", "differ", "failed", "skipped")}
    code = AGREE if counts["differ"] == counts["failed"] == 0 and counts["agree"] else DIFFER
    if as_json:
        return json.dumps({"rows": [asdict(r) for r in rows], "counts": counts}, indent=1), code
    lines = [r.line() for r in rows]
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines), code
