"""Neuron mode: compile with the installed NKI, run on a NeuronCore, check, measure.

Current-API kernels (``import nki``, NKI 0.8 / Neuron 2.34): the ``@nki.jit`` kernel, called with
NumPy arrays, compiles (with the ``CompileConfig`` its decorator carries, as written) and runs on
the device; ``NKI_ARTIFACTS_DIR`` keeps its NEFF, which ``nrtpy`` times on the device (a separate
Python: the ``nrtpy`` and ``nki`` wheels cannot share one environment) or, without it,
neuron-explorer/neuron-profile. Legacy kernels (``neuronxcc.nki``) keep ``nki.baremetal`` and
``nki.benchmark`` where the SDK still has them (removed in NKI 0.8).

Before the first candidate of an API, a known kernel (the drift canary) runs on the device: a
result of all zeros, a constant or a wrong one makes every evaluation ``infra_error`` instead of
a candidate's verdict (the known failure after an SDK upgrade, nki-samples #134).

Nothing here can run without a Trainium machine; what is tested without one is device
detection, the commands and environments built, the parsing of what the SDK prints, the canary's
judgement on device results made in the tests, and the evaluator's flow with a stand-in harness.
The plugin README lists what is unverified. One candidate runs per NeuronCore at a time
(``NEURON_RT_VISIBLE_CORES``); candidates on different cores compile in parallel.
"""

from __future__ import annotations

import asyncio
import glob
import importlib.util
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from autocomp_core import SandboxLimits, last_json_line, private_workdir, run_sandboxed

from .canary import CANARY_MESSAGE, CANARY_SEEDS, CANARY_SOURCE, CANARY_SPEC, canary_verdict
from .evaluate import Verdict, child_env, seeds_for
from .problems.spec import ProblemSpec

RESULT_TAG = "AUTOCOMP_TRN_RESULT "
#: physical NeuronCores per device; the harness runs at LNC=1, one physical core per candidate
CORES_PER_DEVICE = {"trn1": 2, "trn2": 8, "trn3": 8}
#: where a Python with ``nrtpy`` is named, when it is not this one
NRTPY_PYTHON_ENV = "AUTOCOMP_TRN_NRTPY_PYTHON"
LEGACY_REMOVED = (
    "this Neuron SDK has no neuronxcc.nki (the legacy NKI API, removed in NKI 0.8 / Neuron 2.34): "
    "write the kernel in the current API (import nki, nki.language, nki.isa)"
)


@dataclass
class NeuronEnv:
    devices: list[str]
    cores: int
    v1: bool  # neuronxcc.nki importable (legacy; gone from Neuron 2.34)
    v2: bool  # nki importable
    profiler: str | None  # neuron-explorer (or the legacy neuron-profile) on PATH
    nrtpy: str | None = None  # a Python that imports nrtpy (times a NEFF on the device)

    @property
    def usable(self) -> bool:
        return bool(self.devices) and (self.v1 or self.v2)


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package; a module without a spec
        return False


def nrtpy_python(env: dict[str, str] | None = None) -> str | None:
    """This Python where it imports nrtpy, else the one ``AUTOCOMP_TRN_NRTPY_PYTHON`` names."""
    if importable("nrtpy"):
        return sys.executable
    named = (os.environ if env is None else env).get(NRTPY_PYTHON_ENV, "")
    return named if named and os.access(named, os.X_OK) else None


def detect(generation: str = "trn2", dev_glob: str = "/dev/neuron*") -> NeuronEnv:
    """What this machine has: Neuron devices, the SDK's NKI front-ends, the timing tools."""
    devices = sorted(d for d in glob.glob(dev_glob) if re.fullmatch(r".*/neuron\d+", d))
    return NeuronEnv(
        devices=devices,
        cores=len(devices) * CORES_PER_DEVICE.get(generation, 2),
        v1=importable("neuronxcc.nki"),
        v2=importable("nki"),
        profiler=shutil.which("neuron-explorer") or shutil.which("neuron-profile"),
        nrtpy=nrtpy_python(),
    )


def api_version(code: str) -> str:
    """``v1`` for kernels written against the legacy ``neuronxcc.nki``, ``v2`` for the current
    ``nki``, ``mixed`` for a kernel importing both (refused, as the emulator refuses it)."""
    legacy = re.search(r"^\s*(from|import)\s+neuronxcc", code, re.MULTILINE)
    current = re.search(r"^\s*(from\s+nki\b|import\s+nki\b)", code, re.MULTILINE)
    if legacy and current:
        return "mixed"
    return "v1" if legacy else "v2"


def harness_command(python: str, request_path: Path) -> list[str]:
    return [python, "-m", "autocomp_trn.runtime.neuron_main", str(request_path)]


def core_env(core: int) -> dict[str, str]:
    """Pin the child to one physical NeuronCore (LNC=1)."""
    return {
        "NEURON_RT_VISIBLE_CORES": str(core),
        "NEURON_RT_NUM_CORES": "1",
        "NEURON_LOGICAL_NC_CONFIG": "1",
    }


def harness_env(
    core: int, generation: str, work: Path, outer: dict[str, str] | None = None
) -> dict[str, str]:
    """The harness's environment: the Neuron settings of this process (``NEURON_*``, ``NKI_*``,
    the runtime's ``LD_LIBRARY_PATH``; the sandbox starts from an empty environment), the core,
    the target the compiler builds for (``nki.jit`` reads ``NEURON_PLATFORM_TARGET_OVERRIDE``),
    and where the NEFF is kept (``NKI_ARTIFACTS_DIR``, read when ``nki`` is imported)."""
    outer = os.environ if outer is None else outer
    return {
        **{
            k: v
            for k, v in outer.items()
            if k.startswith(("NEURON_", "NKI_")) or k == "LD_LIBRARY_PATH"
        },
        **core_env(core),
        "NEURON_PLATFORM_TARGET_OVERRIDE": generation,
        "NKI_ARTIFACTS_DIR": str(work / "artifacts"),
    }


def nrtpy_command(python: str, neff: Path, inputs: Path, warmup: int, iters: int) -> list[str]:
    """Device-side timing of a NEFF by nrtpy (``runtime/nrtpy_bench.py``, run as a file: the
    nrtpy Python need not have this plugin)."""
    script = Path(__file__).parent / "runtime" / "nrtpy_bench.py"
    return [python, str(script), str(neff), str(inputs), str(warmup), str(iters)]


def nrtpy_env(outer: dict[str, str]) -> dict[str, str]:
    """The nrtpy Python's environment: this one without its Python paths (that Python has its own
    packages; the nki wheel, which conflicts with nrtpy's, must not be importable there)."""
    return {k: v for k, v in outer.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def p99_us(durations_ms: list[float]) -> float:
    """The 99th percentile of nrtpy's per-iteration device times (ms) in microseconds."""
    if not durations_ms:
        raise ValueError("nrtpy returned no timed iteration")
    return float(np.percentile(np.asarray(durations_ms, dtype=np.float64), 99)) * 1e3


def find_neff(artifacts: Path) -> Path:
    """The NEFF the standalone ``nki.jit`` call left under ``NKI_ARTIFACTS_DIR`` (the newest)."""
    neffs = sorted(artifacts.rglob("*.neff"), key=lambda p: p.stat().st_mtime)
    if not neffs:
        raise FileNotFoundError(f"no NEFF under {artifacts} after compiling the kernel")
    return neffs[-1]


def profile_commands(
    profiler: str, neff: Path, ntff: Path, executions: int = 20, nth: int = 10
) -> list[list[str]]:
    """Profiler capture of one execution, then its summary as JSON: the current API's timing where
    nrtpy is missing (neuron-explorer takes the legacy neuron-profile's options, unverified)."""
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
    """Evaluates on NeuronCores: a queue of free cores, one candidate per core at a time. The
    drift canary runs once per API generation before that generation's first candidate."""

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
        self._canary: dict[str, Verdict | None] = {}  # api -> None (passed) or the verdict
        self._canary_lock: asyncio.Lock | None = None

    async def _core(self) -> int:
        if self._free is None:
            self._free = asyncio.Queue()
            for c in self.cores:
                self._free.put_nowait(c)
        return await self._free.get()

    def request(self, spec: ProblemSpec, code: str, seed: int, canary: bool = False) -> dict:
        return {
            "problem": spec.id,
            "kernel": "kernel.py",
            "entry": spec.entry,
            "api": api_version(code),
            "generation": self.generation,
            "seeds": CANARY_SEEDS if canary else seeds_for(seed, spec.id, code, self.seeds),
            "warmup": self.warmup,
            "iters": self.iters,
            "kwargs": spec.kwargs,
            "profiler": self.env.profiler,
            "nrtpy": self.env.nrtpy,
            "canary": canary,
        }

    async def canary(self, api: str) -> Verdict | None:
        """None where the known kernel gives the right answer on this SDK and device, else the
        ``infra_error`` every evaluation of that API gets (checked once per evaluator)."""
        if self._canary_lock is None:
            self._canary_lock = asyncio.Lock()
        async with self._canary_lock:
            if api not in self._canary:
                v = await self._run(CANARY_SPEC, CANARY_SOURCE[api], 0, self.timeout_s, True)
                if v.ok:
                    self._canary[api] = None
                elif v.status == "infra_error" and v.message.startswith(CANARY_MESSAGE):
                    self._canary[api] = v
                else:  # the known kernel did not even run: the SDK is no more to be trusted
                    last = (v.message.strip().splitlines() or [""])[-1]
                    self._canary[api] = canary_verdict(
                        f"the known kernel did not run ({v.status}) {last}".strip()
                    )
        return self._canary[api]

    async def evaluate(
        self, spec: ProblemSpec, code: str, seed: int = 0, timeout_s: float | None = None
    ) -> Verdict:
        """``timeout_s`` (the run's evaluation limit) caps this evaluator's own limit."""
        api = api_version(code)
        if api == "mixed":
            return Verdict(
                "compile_error",
                "the kernel imports both the current nki API and the legacy neuronxcc.nki: use "
                "one (the current: import nki)",
                code="err_mixed_api",
            )
        if api == "v1" and not self.env.v1:
            return Verdict("compile_error", LEGACY_REMOVED, code="err_legacy_api_removed")
        if api == "v2" and not self.env.v2:
            return Verdict(
                "compile_error",
                "this Neuron SDK has no nki package (the current API, Neuron 2.27 and later): "
                "only legacy neuronxcc.nki kernels run here",
                code="err_no_current_api",
            )
        failed = await self.canary(api)
        if failed is not None:
            return failed
        return await self._run(spec, code, seed, min(self.timeout_s, timeout_s or float("inf")))

    async def _run(
        self, spec: ProblemSpec, code: str, seed: int, limit: float, canary: bool = False
    ) -> Verdict:
        core = await self._core()
        try:
            with private_workdir("autocomp-trn-neuron-") as work:
                work.chmod(0o755)
                (work / "kernel.py").write_text(code)
                request = self.request(spec, code, seed, canary)
                (work / "request.json").write_text(json.dumps(request))
                t = time.perf_counter()
                run = await run_sandboxed(
                    harness_command(sys.executable, work / "request.json"),
                    limits=SandboxLimits(
                        wall_s=limit, memory_mb=None, max_processes=256, file_size_mb=4096
                    ),
                    cwd=work,
                    env={**child_env(), **harness_env(core, self.generation, work)},
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
            code=out.get("code", ""),
            details=out,
            phases_s=phases,
        )
