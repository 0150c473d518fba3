"""Neuron mode: compile with the installed NKI, run on a NeuronCore, check, measure.

Nothing here can run without a Trainium machine; what is tested without one is device
detection, the commands built, and the parsing of what the SDK prints. The plugin README lists
what is unverified. One candidate runs per NeuronCore at a time (``NEURON_RT_VISIBLE_CORES``);
candidates on different cores compile in parallel.
"""

from __future__ import annotations

import asyncio
import glob
import importlib.util
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import SandboxLimits, last_json_line, private_workdir, run_sandboxed

from .evaluate import Verdict, child_env, seeds_for
from .problems.spec import ProblemSpec

RESULT_TAG = "AUTOCOMP_TRN_RESULT "
CORES_PER_DEVICE = {"trn1": 2, "trn2": 8}


@dataclass
class NeuronEnv:
    devices: list[str]
    cores: int
    v1: bool  # neuronxcc.nki importable
    v2: bool  # nki importable
    profiler: str | None  # neuron-profile (or neuron-explorer) on PATH

    @property
    def usable(self) -> bool:
        return bool(self.devices) and (self.v1 or self.v2)


def detect(generation: str = "trn1", dev_glob: str = "/dev/neuron*") -> NeuronEnv:
    """What this machine has: Neuron devices, the SDK's NKI front-ends, the profiler."""
    devices = sorted(d for d in glob.glob(dev_glob) if re.fullmatch(r".*/neuron\d+", d))
    return NeuronEnv(
        devices=devices,
        cores=len(devices) * CORES_PER_DEVICE.get(generation, 2),
        v1=importlib.util.find_spec("neuronxcc") is not None,
        v2=importlib.util.find_spec("nki") is not None,
        profiler=shutil.which("neuron-profile") or shutil.which("neuron-explorer"),
    )


def api_version(code: str) -> str:
    """``v1`` for kernels written against ``neuronxcc.nki``, else ``v2``."""
    return "v1" if re.search(r"^\s*(from|import)\s+neuronxcc", code, re.MULTILINE) else "v2"


def harness_command(python: str, request_path: Path) -> list[str]:
    return [python, "-m", "autocomp_trn.runtime.neuron_main", str(request_path)]


def core_env(core: int) -> dict[str, str]:
    """Pin the child to one NeuronCore."""
    return {"NEURON_RT_VISIBLE_CORES": str(core), "NEURON_RT_NUM_CORES": "1"}


def profile_commands(
    profiler: str, neff: Path, ntff: Path, executions: int = 20, nth: int = 10
) -> list[list[str]]:
    """neuron-profile capture of one execution, then its summary as JSON (the v2 path's measurement)."""
    captured = ntff.with_name(f"{ntff.stem}_exec_{nth}{ntff.suffix}")
    return [
        [
            profiler,
            "capture",
            "-n",
            str(neff),
            "-s",
            str(ntff),
            "--num-exec",
            str(executions),
            "--profile-nth-exec",
            str(nth),
        ],
        [profiler, "view", "-n", str(neff), "-s", str(captured), "--output-format", "summary-json"],
    ]


def parse_profile_summary(text: str) -> float:
    """``total_time`` (seconds) from neuron-profile's summary JSON (one top-level key) -> microseconds."""
    data = json.loads(text)
    if not isinstance(data, dict) or not data:
        raise ValueError("empty neuron-profile summary")
    metrics = data if "total_time" in data else next(iter(data.values()))
    return float(metrics["total_time"]) * 1e6


def parse_latency_ms(text: str) -> float | None:
    """The P99 latency from harness output in the upstream style: ``Latency: 1.234 ms (P99)``. Where a
    line also prints P50 first (``P50 Latency: ... P99 Latency: ...``), the P99 value is taken."""
    p99 = re.search(r"P99 Latency:\s*([0-9.eE+-]+)\s*ms", text)
    if p99:
        return float(p99.group(1))
    plain = re.search(r"(?<!P50 )Latency:\s*([0-9.eE+-]+)\s*ms", text)
    return float(plain.group(1)) if plain else None


def parse_result(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            try:
                return json.loads(line[len(RESULT_TAG) :])
            except ValueError:
                return None
    return last_json_line(stdout)


class NeuronEvaluator:
    """Evaluates on NeuronCores: a queue of free cores, one candidate per core at a time."""

    def __init__(
        self,
        env: NeuronEnv,
        generation: str,
        seeds: int,
        timeout_s: float,
        warmup: int,
        iters: int,
        cores: int | None = None,
    ) -> None:
        self.env, self.generation, self.seeds = env, generation, seeds
        self.timeout_s, self.warmup, self.iters = timeout_s, warmup, iters
        self.cores = list(range(min(cores or env.cores, env.cores) or 1))
        self._free: asyncio.Queue[int] | None = None

    async def _core(self) -> int:
        if self._free is None:
            self._free = asyncio.Queue()
            for c in self.cores:
                self._free.put_nowait(c)
        return await self._free.get()

    def request(self, spec: ProblemSpec, code: str, seed: int) -> dict:
        return {
            "problem": spec.id,
            "kernel": "kernel.py",
            "entry": spec.entry,
            "api": api_version(code),
            "seeds": seeds_for(seed, spec.id, code, self.seeds),
            "warmup": self.warmup,
            "iters": self.iters,
            "kwargs": spec.kwargs,
            "profiler": self.env.profiler,
        }

    async def evaluate(
        self, spec: ProblemSpec, code: str, seed: int = 0, timeout_s: float | None = None
    ) -> Verdict:
        """``timeout_s`` (the run's evaluation limit) caps this evaluator's own limit."""
        limit = min(self.timeout_s, timeout_s or float("inf"))
        core = await self._core()
        try:
            with private_workdir("autocomp-trn-neuron-") as work:
                work.chmod(0o755)
                (work / "kernel.py").write_text(code)
                (work / "request.json").write_text(json.dumps(self.request(spec, code, seed)))
                t = time.perf_counter()
                run = await run_sandboxed(
                    harness_command(sys.executable, work / "request.json"),
                    limits=SandboxLimits(
                        wall_s=limit, memory_mb=None, max_processes=256, file_size_mb=4096
                    ),
                    cwd=work,
                    env={**child_env(), **core_env(core)},
                )
                phases = {"neuron_s": time.perf_counter() - t}
        finally:
            assert self._free is not None
            self._free.put_nowait(core)
        out = parse_result(run.stdout) if not run.timed_out else None
        if out is None:
            status = "timeout" if run.timed_out else "crash"
            return Verdict(status, (run.stderr or run.stdout or "")[-2000:], phases_s=phases)
        return Verdict(
            out["status"],
            out.get("message", ""),
            out.get("latency_us"),
            f"measured P99 latency {out.get('latency_us', 0):.2f} us on a NeuronCore"
            if out.get("latency_us")
            else "",
            details=out,
            phases_s=phases,
        )
